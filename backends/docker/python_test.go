package docker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVenvFromPyenvInterpreter: a venv whose base interpreter lives outside
// it (a pyenv build under /root, closed to the sandbox's uid in the image)
// runs as `python` and `python3` inside, and comes first on PATH.
func TestVenvFromPyenvInterpreter(t *testing.T) {
	bases, _ := filepath.Glob("/root/.pyenv/versions/3.1*/bin/python3")
	if len(bases) == 0 {
		t.Skip("no pyenv CPython under /root/.pyenv/versions on this machine")
	}
	f := newFixture(t)
	venv := filepath.Join(filepath.Dir(f.root), "venv")
	if out, err := exec.Command(bases[0], "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("making a venv: %v %s", err, out)
	}
	f.cfg.Project.Python = filepath.Join(venv, "bin", "python")
	res, stdout, stderr := runCaptured(t, f, "reproducer", time.Minute, "sh", "-c",
		`python -c 'import sys; print(sys.prefix)' && python3 -c 'import sys; print(sys.base_prefix)' && command -v python`)
	out := stdout.String()
	if res.ExitCode != 0 || !strings.Contains(out, venv) || !strings.Contains(out, filepath.Dir(filepath.Dir(bases[0]))) {
		t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, out, stderr.String())
	}
	if !strings.Contains(out, filepath.Join(venv, "bin", "python")+"\n") {
		t.Errorf("python does not resolve to the venv first: %q", out)
	}
	if _, err := os.Stat(filepath.Join(venv, "bin", "python")); err != nil {
		t.Fatal(err)
	}
}
