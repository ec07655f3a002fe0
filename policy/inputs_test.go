package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// credentialCanary plants a credential directory in home as the issue's
// attack names it (~/.config/gcloud/legacy_credentials/me@x.com, a bin
// in it for pyvenv.cfg to name) holding a canary file; it returns the
// bin directory and the canary's path.
func credentialCanary(t *testing.T, home string) (bin, canary string) {
	t.Helper()
	dir := filepath.Join(home, ".config", "gcloud", "legacy_credentials", "me@x.com")
	bin = filepath.Join(dir, "bin")
	must(t, os.MkdirAll(bin, 0o755))
	canary = filepath.Join(dir, "adc.json")
	must(t, os.WriteFile(canary, []byte(`{"refresh_token":"CANARY-pyvenv-home"}`), 0o600))
	return bin, canary
}

// exposes reports the mount of p (nil: none) that lets the sandbox read
// path: one at or above it with no mask at or above path.
func exposes(p *Policy, path string) string {
	if p == nil {
		return ""
	}
	for _, m := range p.Mounts {
		if !within(m.Path, path) {
			continue
		}
		if slices.ContainsFunc(p.Masked, func(u string) bool { return within(u, path) }) {
			continue
		}
		return m.Path + " (" + m.Why + ")"
	}
	return ""
}

// TestDerivedPolicyInputsOutOfTheWritablePaths: nothing a policy is
// computed from may be writable by any sandbox of the workspace, however
// it was found: the python environment's pyvenv.cfg and what it names,
// a writable path inside the environment, go.mod and go.sum, the module
// cache, the config itself. Each plants what an earlier sandbox could
// have left: a pyvenv.cfg naming a credential directory that holds a
// canary. The policy must refuse, naming the input and the writable
// path, and no mount may expose the canary.
func TestDerivedPolicyInputsOutOfTheWritablePaths(t *testing.T) {
	home := t.TempDir()
	credBin, canary := credentialCanary(t, home)
	elsewhere := t.TempDir()
	base := makeUserBase(t, shortDir(t))
	cache := fakeModCache(t, t.TempDir(), "example.com/dep@v1.0.0")
	tests := []struct {
		name, toml string
		env        []string
		plant      func(root string)
		want       string // in the one line of the refusal
	}{
		{"pyvenv.cfg is a writable path", "[project]\npython = \"venv/bin/python3\"\n[sandbox.reproducer]\nwritable = [\"repros\", \"venv/pyvenv.cfg\"]\n",
			nil, func(root string) {
				makeVenv(t, filepath.Join(root, "venv"), base, "home = "+credBin+"\n")
			}, `pyvenv.cfg`},
		{"pyvenv.cfg in bin is a writable path", "[project]\npython = \"venv/bin/python3\"\n[sandbox.agent]\nwritable = [\"issues\", \"venv/bin/pyvenv.cfg\"]\n",
			nil, func(root string) {
				makeVenv(t, filepath.Join(root, "venv"), base, "home = "+base.prefix+"/bin\n")
			}, `lies in the writable path venv/bin/pyvenv.cfg`},
		{"pyvenv.cfg home lies in a writable path", "[project]\npython = \"" + filepath.Join(elsewhere, "v", "bin", "python3") + "\"\n",
			nil, func(root string) {
				// The maintainer's venv, outside, names a base in repros;
				// a sandbox left repros/py pointing at the credentials.
				makeVenv(t, filepath.Join(elsewhere, "v"), base, "home = "+filepath.Join(root, "repros", "py", "bin")+"\n")
				must(t, os.Symlink(filepath.Dir(credBin), filepath.Join(root, "repros", "py")))
			}, `lies in the writable path repros`},
		{"a writable path inside the python environment", "[project]\npython = \"venv/bin/python3\"\n[sandbox.reproducer]\nwritable = [\"repros\", \"venv/lib\"]\n",
			nil, func(root string) {
				makeVenv(t, filepath.Join(root, "venv"), base, "home = "+base.prefix+"/bin\n")
			}, `venv/lib`},
		{"go.sum is a writable path", "[sandbox.agent]\nwritable = [\"issues\", \"go.sum\"]\n",
			[]string{"GOMODCACHE=" + cache}, func(root string) {
				must(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/w\n"), 0o644))
				must(t, os.WriteFile(filepath.Join(root, "go.sum"), []byte("example.com/dep v1.0.0 h1:x=\n"), 0o644))
			}, `lies in the writable path go.sum`},
		{"GOMODCACHE through a writable path", "",
			[]string{"GOMODCACHE=ROOT/repros/mod"}, func(root string) {
				must(t, os.Symlink(filepath.Dir(credBin), filepath.Join(root, "repros", "mod")))
				must(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/w\n"), 0o644))
				must(t, os.WriteFile(filepath.Join(root, "go.sum"), []byte("example.com/dep v1.0.0 h1:x=\n"), 0o644))
			}, `lies in the writable path repros`},
		// The agent's own writable path is outOfReach's to refuse; the
		// reproducer's policy must refuse it too.
		{"the state directory (prepared caches) in the agent's writable path", "[sandbox.agent]\nwritable = [\"issues\", \"state\"]\n",
			[]string{"XDG_STATE_HOME=ROOT/state"}, nil, `state directory ROOT/state/triage-sandbox (XDG_STATE_HOME) lies in the writable path state`},
		{"the config in another role's writable path", "[sandbox.agent]\nwritable = [\"issues\", \"triage.toml\"]\n",
			nil, nil, `triage.toml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := workspace(t, tt.toml)
			for _, d := range []string{"repros", "issues"} {
				must(t, os.MkdirAll(filepath.Join(cfg.Root, d), 0o755))
			}
			if tt.plant != nil {
				tt.plant(cfg.Root)
			}
			var env []string
			for _, e := range tt.env {
				env = append(env, strings.ReplaceAll(e, "ROOT", cfg.Root))
			}
			host := Host{Home: home, Env: env, OS: "linux", UID: 1000, GID: 1000, Cwd: "/nonexistent"}
			want := strings.ReplaceAll(tt.want, "ROOT", cfg.Root)
			for _, role := range profiles.Roles() {
				if strings.Contains(tt.name, "agent's writable path") && role == profiles.RoleAgent {
					continue
				}
				p, err := Build(cfg, role, host, Options{})
				if m := exposes(p, canary); m != "" {
					t.Errorf("%s: the mount %s exposes the canary %s", role, m, canary)
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("%s: err = %v, want a refusal naming %q", role, err, want)
				}
				t.Logf("%s: %v", role, err)
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("%s: more than one line: %v", role, err)
				}
			}
		})
	}
}

// TestDerivedMountsNotInUnreadable: a mount the policy derives (the
// python environment's base, a Go module, the host toolchain) that is or
// lies inside an unreadable path is refused, never mounted; one that
// holds an unreadable path masks it. The maintainer's own venv whose
// pyvenv.cfg names a credential directory must not mount it.
func TestDerivedMountsNotInUnreadable(t *testing.T) {
	home := t.TempDir()
	credBin, canary := credentialCanary(t, home)
	base := makeUserBase(t, shortDir(t))
	venv := filepath.Join(t.TempDir(), "venv")
	py := makeVenv(t, venv, base, "home = "+credBin+"\n")
	cfg := workspace(t, "[project]\npython = \""+py+"\"\n")
	host := Host{Home: home, OS: "linux", UID: 1000, GID: 1000, Cwd: "/nonexistent"}
	p, err := Build(cfg, profiles.RoleReproducer, host, Options{})
	if m := exposes(p, canary); m != "" {
		t.Errorf("the mount %s exposes the canary %s", m, canary)
	}
	if err == nil || !strings.Contains(err.Error(), "unreadable path") || !strings.Contains(err.Error(), filepath.Join(home, ".config", "gcloud")) {
		t.Fatalf("err = %v, want a refusal naming the unreadable path", err)
	}

	// The host toolchain's /usr holding an unreadable path masks it.
	cfg = workspace(t, "[sandbox]\nsecrets = [\"/usr/lib/triage-sandbox-canary\"]\n")
	p, err = Build(cfg, profiles.RoleReproducer, fakeHost(t), Options{})
	must(t, err)
	if !slices.ContainsFunc(p.Mounts, func(m Mount) bool { return m.Path == "/usr" }) {
		t.Skip("no host toolchain /usr mount on this host") // not a pass: said
	}
	if !slices.Contains(p.Masked, "/usr/lib/triage-sandbox-canary") {
		t.Errorf("the host toolchain's /usr holds the unreadable /usr/lib/triage-sandbox-canary, not masked: %q", p.Masked)
	}
}

// TestPolicyInputsListed: policy --json lists each input the policy was
// computed from with its owner and whether a sandbox could write it.
func TestPolicyInputsListed(t *testing.T) {
	base := makeUserBase(t, shortDir(t))
	venv := filepath.Join(t.TempDir(), "venv")
	py := makeVenv(t, venv, base, "home = "+base.prefix+"/bin\n")
	cfg := workspace(t, "[project]\npython = \""+py+"\"\n")
	p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t), Options{})
	must(t, err)
	want := map[string]bool{cfg.Path: false, py: false, filepath.Join(venv, "pyvenv.cfg"): false, base.prefix: false}
	for _, in := range p.Inputs {
		if _, ok := want[in.Path]; ok {
			want[in.Path] = true
			if in.SandboxWritable || in.OwnerUID != os.Getuid() {
				t.Errorf("input %+v: want owner %d, not sandbox-writable", in, os.Getuid())
			}
		}
	}
	for path, seen := range want {
		if !seen {
			t.Errorf("input %s not listed: %+v", path, p.Inputs)
		}
	}
}

// TestVisibleGoNotSandboxWritten: the go that keys the prepared build
// cache is never one a sandbox could have written, even where a host
// root makes the writable path visible (a workspace under a host root).
func TestVisibleGoNotSandboxWritten(t *testing.T) {
	cfg := workspace(t, "")
	for _, d := range []string{"repros/bin", "issues"} {
		must(t, os.MkdirAll(filepath.Join(cfg.Root, d), 0o755))
	}
	planted := filepath.Join(cfg.Root, "repros", "bin", "go")
	must(t, os.WriteFile(planted, []byte("#!/bin/sh\n"), 0o755))
	p := &Policy{WorkspaceRoot: cfg.Root, Base: Base{Kind: BaseHost, HostRoots: []string{filepath.Dir(cfg.Root)}}}
	host := Host{Env: []string{"PATH=" + filepath.Dir(planted)}}
	if got := visibleGo(p, host, writtenBySandboxes(nil, cfg, cfg.Root)); got != "" {
		t.Errorf("visibleGo = %q, a go in the writable path repros", got)
	}
	// The control: the same go outside the writable paths is found.
	outside := filepath.Join(cfg.Root, "tools")
	must(t, os.MkdirAll(outside, 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "go"), []byte("#!/bin/sh\n"), 0o755))
	host = Host{Env: []string{"PATH=" + outside}}
	if got := visibleGo(p, host, writtenBySandboxes(nil, cfg, cfg.Root)); got != filepath.Join(outside, "go") {
		t.Errorf("visibleGo = %q, want the control %s", got, filepath.Join(outside, "go"))
	}
}
