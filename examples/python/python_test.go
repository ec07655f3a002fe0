// Package python tests the Python helper harnesses call
// (examples/python/triage_sandbox.py) against the real binary.
package python

import (
	"os"
	"os/exec"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// TestPythonHelper runs the helper's unittest suite on a fixture
// workspace with the binary this checkout builds.
func TestPythonHelper(t *testing.T) {
	testenv.RequireDocker(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command("python3", "-B", "-m", "unittest", "-v", "test_triage_sandbox")
	cmd.Env = append(os.Environ(), "TRIAGE_SANDBOX_BIN="+testenv.Binary(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
