package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// userBase lays out a user's python build (as pyenv installs one) in dir:
// bin/python3, the standard library with a socket planted in it, and a
// site-packages holding a package and a socket deep inside. A venv made
// from it has its pyvenv.cfg written by the caller.
type userBase struct {
	prefix, stdlibSock, site, siteSock string
}

func makeUserBase(t *testing.T, dir string) userBase {
	t.Helper()
	b := userBase{prefix: filepath.Join(dir, "3.11.7")}
	lib := filepath.Join(b.prefix, "lib", "python3.11")
	b.site = filepath.Join(lib, "site-packages")
	must(t, os.MkdirAll(filepath.Join(b.prefix, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(b.prefix, "bin", "python3.11"), []byte("#!/bin/false\n"), 0o755))
	must(t, os.Symlink("python3.11", filepath.Join(b.prefix, "bin", "python3")))
	must(t, os.MkdirAll(filepath.Join(lib, "lib-dynload"), 0o755))
	must(t, os.WriteFile(filepath.Join(lib, "os.py"), nil, 0o644))
	must(t, os.MkdirAll(filepath.Join(b.site, "requests"), 0o755))
	b.stdlibSock = filepath.Join(lib, "lib-dynload", "d.sock")
	b.siteSock = filepath.Join(b.site, "requests", "s.sock")
	listen(t, b.stdlibSock)
	listen(t, b.siteSock)
	return b
}

// shortDir is a temporary directory with a path short enough for the
// sockets planted deep in it (a unix socket's path has 108 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "v")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// makeVenv lays out a venv at dir whose interpreter is base's, with cfg as
// its pyvenv.cfg (none when cfg is "").
func makeVenv(t *testing.T, dir string, b userBase, cfg string) string {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "lib", "python3.11", "site-packages"), 0o755))
	must(t, os.Symlink(filepath.Join(b.prefix, "bin", "python3"), filepath.Join(dir, "bin", "python3")))
	if cfg != "" {
		must(t, os.WriteFile(filepath.Join(dir, "pyvenv.cfg"), []byte(cfg), 0o644))
	}
	return filepath.Join(dir, "bin", "python3")
}

// TestVenvBaseSitePackagesHidden is issue 34's #8 for a venv made from a
// user's python build (pyenv): the base prefix is the user's, so it is
// mounted and scanned for sockets, but a venv that does not include the
// base's site-packages (python -m venv's default) is not given them: the
// directory is masked whole and not walked (it was most of the 0.2–0.8 s
// every run spent scanning). What stays mounted of the base is scanned as
// before: a socket in its standard library is masked. A venv that
// includes them, or a pyvenv.cfg that does not say, changes nothing.
func TestVenvBaseSitePackagesHidden(t *testing.T) {
	const noSite = "include-system-site-packages = false\n"
	for _, tc := range []struct {
		name   string
		cfg    string // pyvenv.cfg after its home line
		binCfg string // bin/pyvenv.cfg, which Python reads first
		hidden bool
	}{
		{"false", noSite, "", true},
		{"False, CRLF, last one counts", "include-system-site-packages = true\r\nInclude-System-Site-Packages=False\r\n", "", true},
		{"true", "include-system-site-packages = true\n", "", false},
		{"not said (python's default is true)", "version = 3.11.7\n", "", false},
		{"bin/pyvenv.cfg is the one python reads", noSite, "include-system-site-packages = true\n", false},
	} {
		for _, caps := range []struct {
			name string
			caps []Capability
		}{{"host roots", capsBut(profiles.CapImageRoot)}, {"image", capsBut(profiles.CapHostRoot)}} {
			t.Run(tc.name+"/"+caps.name, func(t *testing.T) {
				dir := shortDir(t)
				b := makeUserBase(t, dir)
				venv := filepath.Join(dir, "venv")
				py := makeVenv(t, venv, b, "home = "+filepath.Join(b.prefix, "bin")+"\n"+tc.cfg)
				if tc.binCfg != "" {
					must(t, os.WriteFile(filepath.Join(venv, "bin", "pyvenv.cfg"), []byte(tc.binCfg), 0o644))
				}
				cfg := workspace(t, "")
				cfg.Project.Python = py
				p, err := Build(cfg, "reproducer", fakeHost(t, "PATH=/usr/bin:/bin"), Options{Capabilities: caps.caps})
				must(t, err)
				i := slices.IndexFunc(p.Mounts, func(m Mount) bool { return m.Path == b.prefix })
				if i < 0 || !p.Mounts[i].ReadOnly || p.Mounts[i].System {
					t.Fatalf("the base prefix %s is not a read-only user mount: %+v", b.prefix, p.Mounts)
				}
				base := p.Mounts[i]
				if !slices.Contains(p.Masked, b.stdlibSock) {
					t.Errorf("the socket %s in the base's standard library is not masked: %q", b.stdlibSock, p.Masked)
				}
				if tc.hidden {
					if !slices.Equal(base.Hidden, []string{b.site}) || !slices.Contains(p.Masked, b.site) {
						t.Errorf("the base's site-packages is not hidden: hidden %q masked %q", base.Hidden, p.Masked)
					}
					if slices.Contains(p.Masked, b.siteSock) {
						t.Errorf("the hidden site-packages was walked (found %s): the scan must skip what is masked whole", b.siteSock)
					}
					if !strings.Contains(base.Why, "without its site-packages") {
						t.Errorf("the base's Why does not say what is left out: %q", base.Why)
					}
					if !strings.Contains(Explain(p), b.site+"  (masked: not used by the python environment") {
						t.Errorf("policy's explanation does not say why %s is masked:\n%s", b.site, Explain(p))
					}
					return
				}
				if base.Hidden != nil || slices.Contains(p.Masked, b.site) {
					t.Errorf("site-packages hidden although the venv uses it: hidden %q masked %q", base.Hidden, p.Masked)
				}
				if !slices.Contains(p.Masked, b.siteSock) {
					t.Errorf("the socket %s in the mounted site-packages is not masked: %q", b.siteSock, p.Masked)
				}
			})
		}
	}
}

// TestVenvBaseSitePackagesHiddenNeverCoversAMount: a base's site-packages
// that holds the venv itself, or another mount, is not hidden (the mask
// would hide them too); it stays mounted and scanned.
func TestVenvBaseSitePackagesHiddenNeverCoversAMount(t *testing.T) {
	for _, where := range []string{"venv", "checkout"} {
		t.Run(where, func(t *testing.T) {
			dir := shortDir(t)
			b := makeUserBase(t, dir)
			venv := filepath.Join(dir, "venv")
			body := ""
			if where == "venv" {
				venv = filepath.Join(b.site, "myvenv")
			} else {
				must(t, os.MkdirAll(filepath.Join(b.site, "co"), 0o755))
				body = "[project]\ncheckout = \"" + filepath.Join(b.site, "co") + "\"\n"
			}
			py := makeVenv(t, venv, b, "home = "+filepath.Join(b.prefix, "bin")+"\ninclude-system-site-packages = false\n")
			cfg := workspace(t, body)
			cfg.Project.Python = py
			p, err := Build(cfg, "reproducer", fakeHost(t, "PATH=/usr/bin:/bin"), Options{Capabilities: capsBut(profiles.CapHostRoot)})
			must(t, err)
			for _, m := range p.Mounts {
				if len(m.Hidden) > 0 {
					t.Errorf("%s hides %q, which holds a mount: %+v", m.Path, m.Hidden, p.Mounts)
				}
			}
			if slices.Contains(p.Masked, b.site) || !slices.Contains(p.Masked, b.siteSock) {
				t.Errorf("masked %q: want %s scanned (its socket masked), not masked whole; mounts %+v warnings %q", p.Masked, b.site, p.Mounts, p.Warnings)
			}
		})
	}
}

// TestVenvInsideItsBase: pyenv-virtualenv makes its venvs inside the base
// prefix (versions/3.11.7/envs/NAME). The base holds the venv; it was not
// mounted at all (python found no standard library inside). It is now,
// the venv with it, and without the base's site-packages.
func TestVenvInsideItsBase(t *testing.T) {
	dir := shortDir(t)
	b := makeUserBase(t, dir)
	venv := filepath.Join(b.prefix, "envs", "tool")
	py := makeVenv(t, venv, b, "home = "+filepath.Join(b.prefix, "bin")+"\ninclude-system-site-packages = false\n")
	cfg := workspace(t, "")
	cfg.Project.Python = py
	p, err := Build(cfg, "reproducer", fakeHost(t, "PATH=/usr/bin:/bin"), Options{Capabilities: capsBut(profiles.CapHostRoot)})
	must(t, err)
	i := slices.IndexFunc(p.Mounts, func(m Mount) bool { return m.Path == b.prefix })
	if i < 0 {
		t.Fatalf("the base %s that holds the venv is not mounted: %+v", b.prefix, p.Mounts)
	}
	if !slices.Equal(p.Mounts[i].Hidden, []string{b.site}) || !slices.Contains(p.Masked, b.stdlibSock) {
		t.Errorf("hidden %q masked %q: want the base's site-packages hidden and its standard library scanned", p.Mounts[i].Hidden, p.Masked)
	}
	if p.Python != py {
		t.Errorf("python inside = %s, want %s", p.Python, py)
	}
}
