//go:build linux

package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pytestModules are what Debian's python3-pytest imports (pure Python);
// the test copies them into a venv, as pip would have installed them.
var pytestModules = []string{"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "attr", "attrs", "py.py"}

const debianPackages = "/usr/lib/python3/dist-packages"

// pyenvVenvScript prints what a venv's interpreter sees: pytest (the
// venv's own), the standard library's C modules (lib-dynload, the shared
// libpython) and what is left inside of the base's site-packages.
const pyenvVenvScript = `
import os, sys, ssl, sqlite3, json, pytest
site = os.path.join(sys.base_prefix, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
print("PYTEST", pytest.__version__)
try:
    print("BASE-SITE", len(os.listdir(site)))
except FileNotFoundError:
    print("BASE-SITE absent")
except PermissionError:
    print("BASE-SITE denied")
`

// TestPyenvVenv is issue 34's #8 for a venv made from a pyenv build, as
// a maintainer has one: python -m venv (include-system-site-packages =
// false) with pytest installed in the venv. Its base's site-packages is
// not given to the sandbox (it was scanned for sockets on every run, most
// of the base), and the venv still runs: python with its C modules, pytest
// imported from the venv and running a test. A venv made with
// --system-site-packages still sees the base's packages.
func TestPyenvVenv(t *testing.T) {
	home, _ := os.UserHomeDir()
	bases, _ := filepath.Glob(filepath.Join(home, ".pyenv", "versions", "3.1[1-3]*", "bin", "python3"))
	if len(bases) == 0 {
		t.Skip("no pyenv CPython 3.11-3.13 under ~/.pyenv/versions")
	}
	if _, err := os.Stat(filepath.Join(debianPackages, "pytest")); err != nil {
		t.Skip("python3-pytest is not installed (scripts/setup-tests.sh installs it)")
	}
	base := bases[0]
	prefix := filepath.Dir(filepath.Dir(base))
	baseSite, _ := filepath.Glob(filepath.Join(prefix, "lib", "python3.*", "site-packages", "pip"))
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		own := filepath.Join(filepath.Dir(f.root), "venv")
		mustRun(t, base, "-m", "venv", "--without-pip", own)
		site, _ := filepath.Glob(filepath.Join(own, "lib", "python3.*", "site-packages"))
		if len(site) != 1 {
			t.Fatalf("venv site-packages: %v", site)
		}
		for _, m := range pytestModules {
			mustRun(t, "cp", "-r", filepath.Join(debianPackages, m), site[0])
		}
		must(t, os.MkdirAll(filepath.Join(f.root, "repros"), 0o755))
		must(t, os.WriteFile(filepath.Join(f.root, "repros", "test_ok.py"), []byte("def test_ok():\n    assert 1 + 1 == 2\n"), 0o644))

		f.cfg.Project.Python = filepath.Join(own, "bin", "python")
		p := k.build(t, f, "reproducer", currentHost(t))
		out := k.run(t, p, 0, "python", "-c", pyenvVenvScript)
		if out.res.ExitCode != 0 || !strings.Contains(out.stdout, "PYTEST ") {
			t.Fatalf("the venv's python: exit %d out %q err %q", out.res.ExitCode, out.stdout, out.stderr)
		}
		// Masked: empty (docker, oci), closed (local) or not copied.
		if !strings.Contains(out.stdout, "BASE-SITE 0\n") && !strings.Contains(out.stdout, "BASE-SITE denied\n") &&
			!strings.Contains(out.stdout, "BASE-SITE absent\n") {
			t.Errorf("the base's site-packages is given to a venv that does not use it: %q", out.stdout)
		}
		out = k.run(t, p, 0, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", filepath.Join(f.root, "repros", "test_ok.py"))
		if out.res.ExitCode != 0 || !strings.Contains(out.stdout, "1 passed") {
			t.Errorf("pytest in the venv: exit %d out %q err %q", out.res.ExitCode, out.stdout, out.stderr)
		}

		if len(baseSite) == 0 {
			return // no package in the base to see
		}
		shared := filepath.Join(filepath.Dir(f.root), "shared")
		mustRun(t, base, "-m", "venv", "--without-pip", "--system-site-packages", shared)
		f.cfg.Project.Python = filepath.Join(shared, "bin", "python")
		p = k.build(t, f, "reproducer", currentHost(t))
		out = k.run(t, p, 0, "python", "-c", "import pip; print('PIP', pip.__file__)")
		if out.res.ExitCode != 0 || !strings.Contains(out.stdout, "PIP "+baseSite[0]) {
			t.Errorf("a venv with the base's site-packages: exit %d out %q err %q", out.res.ExitCode, out.stdout, out.stderr)
		}
	})
}

func mustRun(t *testing.T, argv ...string) {
	t.Helper()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
