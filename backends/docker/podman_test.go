package docker_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestSelftestOnPodman runs the whole selftest, both roles, through the
// docker backend against a Podman service the test starts on a socket of
// its own (DOCKER_HOST), checks doctor names Podman, and that neither a
// container of the run nor the service is left.
func TestSelftestOnPodman(t *testing.T) {
	pm := testenv.StartPodman(t, profiles.DefaultImage)
	bin := testenv.Binary(t)
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(withoutVar(os.Environ(), "DOCKER_HOST"), "DOCKER_HOST="+pm.Host)

	doctor := exec.Command(bin, "doctor")
	doctor.Dir, doctor.Env = ws, env
	out, err := doctor.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "docker: engine") || !strings.Contains(string(out), "Podman ") {
		t.Fatalf("doctor does not name Podman (err %v):\n%s", err, out)
	}

	st := exec.Command(bin, "selftest", "--backend", "docker", "--role", "all")
	st.Dir, st.Env = ws, env
	var log strings.Builder
	st.Stdout, st.Stderr = &log, &log
	err = st.Run()
	if err != nil || !strings.Contains(log.String(), "selftest PASSED") {
		t.Fatalf("selftest on Podman (err %v):\n%s", err, log.String())
	}
	t.Logf("%s", lastLines(log.String(), 12))
	left, err := testenv.PodmanContainers(profiles.LabelParentPID + "=" + strconv.Itoa(st.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the selftest left %d Podman containers: %v", len(left), left)
	}
}

func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
