package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// systemPython is the system's own interpreter, which the README
// recommends for [project] python; the test is skipped where there is
// none.
const systemPython = "/usr/bin/python3"

// systemVenv makes a real venv from the system's interpreter in dir (as a
// maintainer does: python3 -m venv), with a unix socket planted in it.
func systemVenv(t *testing.T, dir string) (venv, sock string) {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		t.Skipf("no %s here: %v", systemPython, err)
	}
	venv = filepath.Join(dir, "venv")
	if out, err := exec.Command(systemPython, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("%s -m venv: %v: %s", systemPython, err, out)
	}
	sock = filepath.Join(venv, "lib", "app.sock")
	listen(t, sock)
	return venv, sock
}

// capsBut is every capability but the other base's: a host-root backend
// (local) without CapImageRoot, an image-root one (docker) without
// CapHostRoot.
func capsBut(other Capability) []Capability {
	return slices.DeleteFunc(profiles.Capabilities(), func(c Capability) bool { return c == other })
}

// TestSystemPythonJoinsTheSystemMounts is issue 34's #6 and #8: python =
// "/usr/bin/python3", or a venv made from it, brings /usr as a mount. On
// a host-root base the host root /usr already gives it (the local
// backend refused /usr bound twice, exit 125); on an image it is the host
// toolchain's /usr. Either way it is a system directory, never scanned
// for sockets (every run walked all of /usr), while the venv itself, the
// user's, still is: its socket is masked.
func TestSystemPythonJoinsTheSystemMounts(t *testing.T) {
	cfg := workspace(t, "")
	venv, sock := systemVenv(t, t.TempDir())
	for _, py := range []string{systemPython, filepath.Join(venv, "bin", "python3")} {
		for _, tc := range []struct {
			name string
			caps []Capability
		}{{"host roots", capsBut(profiles.CapImageRoot)}, {"image", capsBut(profiles.CapHostRoot)}} {
			t.Run(filepath.Base(filepath.Dir(filepath.Dir(py)))+"/"+tc.name, func(t *testing.T) {
				cfg.Project.Python = py
				p, err := Build(cfg, "reproducer", fakeHost(t, "PATH=/usr/bin:/bin"), Options{Capabilities: tc.caps})
				must(t, err)
				seen := map[string]bool{}
				for _, m := range p.Mounts {
					if seen[m.Path] {
						t.Errorf("%s is mounted twice: %+v", m.Path, p.Mounts)
					}
					seen[m.Path] = true
					if within("/usr", m.Path) && !m.System {
						t.Errorf("%s (%s) is not a system mount: it would be scanned for sockets on every run", m.Path, m.Why)
					}
					if slices.ContainsFunc(p.Base.HostRoots, func(r string) bool { return within(r, m.Path) }) {
						t.Errorf("%s (%s) is mounted although the host root gives it", m.Path, m.Why)
					}
				}
				if strings.HasPrefix(py, venv) {
					if !hasMount(p, venv, true) {
						t.Errorf("the venv %s is not mounted: %+v", venv, p.Mounts)
					}
					if !slices.Contains(p.Masked, sock) {
						t.Errorf("the socket %s in the user's venv is not masked: %q", sock, p.Masked)
					}
				}
				if want, path := filepath.Dir(py), envValue(p, "PATH"); !strings.HasPrefix(path, want+":") {
					t.Errorf("PATH = %q, want %s first", path, want)
				}
			})
		}
	}
}

// TestSystemDir: a directory is a system one only inside a system tree
// and when root alone may write it and every directory above it up to
// the tree's top: a directory another user owns, or that its group or
// others may write, is any user's mount and is scanned.
func TestSystemDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making directories another user owns needs root")
	}
	tree := t.TempDir()
	must(t, os.Chmod(tree, 0o755))
	for _, d := range []string{"lib/python3", "shared/lib", "users/lib", "outside"} {
		must(t, os.MkdirAll(filepath.Join(tree, d), 0o755))
	}
	must(t, os.Chmod(filepath.Join(tree, "shared"), 0o775))
	must(t, os.Chown(filepath.Join(tree, "users"), 1000, 1000))
	trees := []string{tree, "/nonexistent"}
	for _, tc := range []struct {
		dir  string
		want bool
	}{
		{tree, true},
		{filepath.Join(tree, "lib", "python3"), true},
		{filepath.Join(tree, "shared", "lib"), false}, // group-writable on the way
		{filepath.Join(tree, "users"), false},         // another user's
		{filepath.Join(tree, "users", "lib"), false},  // below another user's
		{filepath.Join(tree, "missing"), false},
		{t.TempDir(), false}, // root's, but in no system tree
	} {
		if got := systemDir(nil, tc.dir, trees); got != tc.want {
			t.Errorf("systemDir(%s) = %v, want %v", tc.dir, got, tc.want)
		}
	}
}

// TestSystemMountsNotScanned: a system mount is not walked for sockets;
// every other read-only mount still is.
func TestSystemMountsNotScanned(t *testing.T) {
	dir := t.TempDir()
	sys, user := filepath.Join(dir, "sys", "x.sock"), filepath.Join(dir, "user", "x.sock")
	listen(t, sys)
	listen(t, user)
	p := &Policy{Mounts: []Mount{
		{Path: filepath.Dir(sys), ReadOnly: true, Kind: "dir", System: true},
		{Path: filepath.Dir(user), ReadOnly: true, Kind: "dir"},
	}}
	maskUnderMounts(p, Host{})
	if !slices.Contains(p.Masked, user) || slices.Contains(p.Masked, sys) {
		t.Errorf("masked %q: want the user mount's socket only", p.Masked)
	}
}

func envValue(p *Policy, name string) string {
	for _, e := range p.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
