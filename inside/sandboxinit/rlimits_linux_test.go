package sandboxinit_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestSupervisorSetsRlimits: the supervisor (`triage-sandbox __exec`)
// gives its command the spec's limits, soft and hard (what a pod's spec
// and sandbox-exec cannot), none without them, and never raises one: a
// value above the hard limit it was started with leaves that limit.
func TestSupervisorSetsRlimits(t *testing.T) {
	const show = "grep -E '^Max (processes|open files|file size|core file size)' /proc/self/limits"
	outer := ulimits(t, exec.Command("sh", "-c", show))
	row := func(name string, v, unit string) string { return fmt.Sprintf("Max %s %s %s %s", name, v, v, unit) }
	for _, tt := range []struct {
		name    string
		rlimits []protocol.Rlimit
		want    []string
	}{
		{"none", nil, []string{outer}},
		{"nproc", []protocol.Rlimit{{Name: "NPROC", Value: 77}}, []string{row("processes", "77", "processes")}},
		{"the policy's", []protocol.Rlimit{{Name: "NOFILE", Value: 300}, {Name: "FSIZE", Value: 1 << 20}, {Name: "CORE", Value: 0}},
			[]string{row("file size", "1048576", "bytes"), row("core file size", "0", "bytes"), row("open files", "300", "files")}},
		// Started with a hard limit of 500 (and a soft one of 200), it
		// asks for 600 and keeps 500.
		{"never raised", []protocol.Rlimit{{Name: "NOFILE", Value: 600}}, []string{row("open files", "500", "files")}},
	} {
		argv := protocol.MustArgv(testenv.Binary(t), protocol.EntryExec, protocol.Exec{Argv: []string{"sh", "-c", show}, Rlimits: tt.rlimits})
		if tt.name == "never raised" {
			argv = append([]string{"sh", "-c", `ulimit -Sn 200 && ulimit -Hn 500 && exec "$@"`, "sh"}, argv...)
		}
		got := ulimits(t, exec.Command(argv[0], argv[1:]...))
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the command's limits %q, want %q in them", tt.name, got, w)
			}
		}
	}
}

// TestSupervisorFileSizeEnforced: under the spec's FSIZE a write past it
// fails (EFBIG) and the file stays at the limit.
func TestSupervisorFileSizeEnforced(t *testing.T) {
	dir := t.TempDir()
	script := "head -c 3000000 /dev/zero > " + dir + "/big; echo big=$?; wc -c < " + dir + "/big"
	argv := protocol.MustArgv(testenv.Binary(t), protocol.EntryExec, protocol.Exec{Argv: []string{"sh", "-c", script},
		Rlimits: []protocol.Rlimit{{Name: "FSIZE", Value: 1 << 20}}})
	if got := ulimits(t, exec.Command(argv[0], argv[1:]...)); strings.Contains(got, "big=0") || !strings.HasSuffix(got, " 1048576") {
		t.Errorf("a 3 MB write under a 1 MiB FSIZE: %q, want it failed at 1048576 bytes", got)
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
