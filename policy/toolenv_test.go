package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestToolEnv: PATH is built for the sandbox, git trusts exactly the
// checkout and the workspace, caches go to scratch; set_env still wins.
func TestToolEnv(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	host := fakeHost(t, "PATH=/root/.pyenv/shims:/usr/bin:/bin", "PYTEST_ADDOPTS=--pdb")
	p, err := Build(cfg, "reproducer", host, Options{})
	must(t, err)
	env := map[string]string{}
	for _, kv := range p.EnvList(ScratchPaths{Home: "/h", Tmp: "/t"}) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	// The caller's visible entries in the caller's order, then the image's.
	if env["PATH"] != "/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin" {
		t.Errorf("PATH = %q", env["PATH"])
	}
	if env["GIT_CONFIG_COUNT"] != "2" || env["GIT_CONFIG_KEY_0"] != "safe.directory" ||
		env["GIT_CONFIG_VALUE_0"] != cfg.Root || !strings.HasSuffix(env["GIT_CONFIG_VALUE_1"], "/widgets") {
		t.Errorf("git env: %v", env)
	}
	for _, v := range env {
		if v == "*" {
			t.Error("safe.directory = * is never set")
		}
	}
	if env["PYTHONPYCACHEPREFIX"] != "/t/pycache" || env["PYTEST_ADDOPTS"] != "-o cache_dir=/t/pytest-cache" || env["GIT_OPTIONAL_LOCKS"] != "0" {
		t.Errorf("caches: %v", env)
	}

	cfg = workspace(t, "[sandbox]\nset_env = { PATH = \"/opt/x/bin\", PYTEST_ADDOPTS = \"-q\" }\n")
	p, err = Build(cfg, "agent", host, Options{})
	must(t, err)
	got := strings.Join(p.EnvList(ScratchPaths{Home: "/h", Tmp: "/t"}), "\n")
	if !strings.Contains(got, "PATH=/opt/x/bin\n") || !strings.Contains(got, "PYTEST_ADDOPTS=-q") || strings.Contains(got, "cache_dir") {
		t.Errorf("set_env must win:\n%s", got)
	}
}

// TestPythonEnvFirstOnPath: the configured interpreter's environment is
// what `python3` and console scripts resolve to.
func TestPythonEnvFirstOnPath(t *testing.T) {
	cfg := workspace(t, "")
	venv := t.TempDir()
	must(t, mkExec(venv+"/bin/python3"))
	cfg.Project.Python = venv + "/bin/python3"
	p, err := Build(cfg, "reproducer", fakeHost(t), Options{})
	must(t, err)
	for _, e := range p.Env {
		if e.Name == "PATH" && !strings.HasPrefix(e.Value, venv+"/bin:") {
			t.Errorf("PATH = %q, want %s/bin first", e.Value, venv)
		}
	}
}

func mkExec(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755)
}

// TestNeededDirsMounted: [sandbox] read_only paths and the directory
// PLAYWRIGHT_BROWSERS_PATH names (where the role passes it) are mounted
// read-only; a path inside an unreadable one is refused.
func TestNeededDirsMounted(t *testing.T) {
	home := t.TempDir()
	browsers := filepath.Join(home, ".cache", "ms-playwright")
	tools := t.TempDir()
	must(t, os.MkdirAll(browsers, 0o755))
	must(t, os.MkdirAll(filepath.Join(home, ".ssh", "keys"), 0o700))
	cfg := workspace(t, "[sandbox]\nread_only = [\""+tools+"\"]\n")
	host := fakeHost(t, "PLAYWRIGHT_BROWSERS_PATH="+browsers)
	host.Home = home
	for _, tt := range []struct {
		role profiles.Role
		want []string
	}{{"reproducer", []string{tools, browsers}}, {"agent", []string{tools}}} {
		p, err := Build(cfg, tt.role, host, Options{})
		must(t, err)
		for _, w := range tt.want {
			if !hasMount(p, w, true) {
				t.Errorf("%s: %s not mounted read-only: %+v", tt.role, w, p.Mounts)
			}
		}
		if tt.role == "agent" && hasMount(p, browsers, true) {
			t.Error("the agent role does not pass PLAYWRIGHT_BROWSERS_PATH, so its directory is not mounted")
		}
	}
	cfg = workspace(t, "[sandbox]\nread_only = [\"~/.ssh/keys\"]\n")
	if _, err := Build(cfg, "agent", host, Options{}); err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Errorf("err = %v", err)
	}
}

// TestVenvBaseInterpreterMounted: a venv's base interpreter (pyvenv.cfg
// home) is mounted beside the venv, and a mount under a closed image
// directory makes that directory traversable.
func TestVenvBaseInterpreterMounted(t *testing.T) {
	base := t.TempDir()
	must(t, mkExec(filepath.Join(base, "bin", "python3.11")))
	venv := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(venv, "bin"), 0o755))
	must(t, os.Symlink(filepath.Join(base, "bin", "python3.11"), filepath.Join(venv, "bin", "python")))
	must(t, os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), []byte("home = "+filepath.Join(base, "bin")+"\ninclude-system-site-packages = false\n"), 0o644))
	cfg := workspace(t, "")
	cfg.Project.Python = filepath.Join(venv, "bin", "python")
	p, err := Build(cfg, "reproducer", fakeHost(t), Options{})
	must(t, err)
	if !hasMount(p, venv, true) || !hasMount(p, base, true) {
		t.Errorf("mounts %+v, want the venv and its base %s", p.Mounts, base)
	}
	if got := traversable([]Mount{{Path: "/root/.pyenv/versions/3.11.7"}, {Path: "/opt/x"}}); len(got) != 1 || got[0] != "/root" {
		t.Errorf("traversable = %v", got)
	}
	if got := traversable([]Mount{{Path: "/opt/x"}}); len(got) != 0 {
		t.Errorf("traversable = %v", got)
	}
}

// TestMountedToolchainOnPath: a toolchain mounted read-only (the host's
// /usr, or read_only = [dir]) is on PATH where the caller has it; the
// host toolchain mounts /usr only on an image base and toolchain = "host".
func TestMountedToolchainOnPath(t *testing.T) {
	tool := t.TempDir()
	must(t, mkExec(tool+"/bin/go"))
	host := fakeHost(t, "PATH=/home/u/.pyenv/shims:"+tool+"/bin:/usr/bin:/bin")
	for _, tc := range []struct {
		name, config string
		wantPath     string
		wantUsr      bool
	}{
		{"host toolchain", "", "/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin", true},
		{"image toolchain", "[sandbox]\ntoolchain = \"image\"\n", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", false},
		{"an image of its own", "[sandbox]\nimage = \"project:1\"\n", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", false},
		{"an image of its own, host toolchain asked for", "[sandbox]\nimage = \"project:1\"\ntoolchain = \"host\"\n", "/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin", true},
		{"read_only on PATH", "[sandbox]\ntoolchain = \"image\"\nread_only = [\"" + tool + "\"]\n", tool + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Build(workspace(t, tc.config), "reproducer", host, Options{})
			must(t, err)
			usr := false
			for _, m := range p.Mounts {
				if m.Path == "/usr" && m.ReadOnly && m.System {
					usr = true
				}
			}
			if usr != tc.wantUsr {
				t.Errorf("host /usr mounted = %v, want %v (%+v)", usr, tc.wantUsr, p.Mounts)
			}
			for _, e := range p.Env {
				if e.Name == "PATH" && e.Value != tc.wantPath {
					t.Errorf("PATH = %q, want %q", e.Value, tc.wantPath)
				}
			}
		})
	}
}
