//go:build linux

package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemPythonVenv is issue 34's #6 as a maintainer meets it: [project]
// python names a venv made with `python3 -m venv` from the system's
// /usr/bin/python3 (or that interpreter itself, as the README recommends).
// The local backend refused every run (/usr bound twice, exit 125); every
// backend must run the venv's interpreter.
func TestSystemPythonVenv(t *testing.T) {
	const system = "/usr/bin/python3"
	if _, err := os.Stat(system); err != nil {
		t.Skipf("no %s here: %v", system, err)
	}
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		venv := filepath.Join(filepath.Dir(f.root), "venv")
		if out, err := exec.Command(system, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
			t.Skipf("%s -m venv: %v: %s", system, err, out)
		}
		for _, py := range []string{filepath.Join(venv, "bin", "python3"), system} {
			f.cfg.Project.Python = py
			p := k.build(t, f, "reproducer", currentHost(t))
			out := k.run(t, p, 0, "python3", "-c", "import sys; print(sys.prefix)")
			want := filepath.Dir(filepath.Dir(py))
			if out.res.ExitCode != 0 || strings.TrimSpace(out.stdout) != want {
				t.Errorf("python = %s: exit %d out %q err %q, want the prefix %s", py, out.res.ExitCode, out.stdout, out.stderr, want)
			}
		}
	})
}
