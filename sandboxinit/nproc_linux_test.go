package sandboxinit_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestSupervisorSetsNProc: the supervisor (`triage-sandbox __exec`) gives
// its command the spec's RLIMIT_NPROC, soft and hard (the limit gVisor's
// kernel enforces where the backend cannot set rlimits: a pod), and none
// without it.
func TestSupervisorSetsNProc(t *testing.T) {
	const show = "grep 'Max processes' /proc/self/limits"
	outer := ulimits(t, exec.Command("sh", "-c", show))
	for _, tt := range []struct {
		nproc int64
		want  string
	}{
		{0, outer},
		{77, "Max processes 77 77 processes"},
	} {
		argv := protocol.MustArgv(testenv.Binary(t), protocol.EntryExec, protocol.Exec{
			Argv: []string{"sh", "-c", show}, NProc: tt.nproc})
		if got := ulimits(t, exec.Command(argv[0], argv[1:]...)); got != tt.want {
			t.Errorf("nproc %d: the command's limits %q, want %q", tt.nproc, got, tt.want)
		}
	}
}

// ulimits runs cmd and returns its output's words, without the
// supervisor's start byte.
func ulimits(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v: %s", cmd.Args, err, stderr.String())
	}
	return strings.Join(strings.Fields(strings.TrimPrefix(string(out), string([]byte{protocol.ExecStarted}))), " ")
}
