package sandboxinit

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestWardenRaisesTheScoreOfSupervisorsOnly: under a confinement that
// keeps /proc read-only (the local backend's, raiseSupervisors), a
// supervisor the holder starts is the OOM killer's first choice with its
// command, from its first instruction; elsewhere it keeps the holder's
// and raises its command's itself. An exporter, which copies the outputs
// back, keeps the holder's score.
func TestWardenRaisesTheScoreOfSupervisorsOnly(t *testing.T) {
	score, err := supervise.OpenOwnScore()
	if err != nil {
		t.Fatal(err)
	}
	th, err := NewThread(nil)
	if err != nil {
		t.Fatal(err)
	}
	base := readScore(t, exec.Command("cat", "/proc/self/oom_score_adj"), nil)
	tests := []struct {
		raise bool
		entry protocol.Entry
		want  string
	}{
		{true, protocol.EntryExec, "1000"},
		{true, protocol.EntryExport, base},
		{false, protocol.EntryExec, base},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s raise=%v", tt.entry, tt.raise), func(t *testing.T) {
			w := &warden{started: map[int]bool{}, thread: th, score: score, raiseSupervisors: tt.raise}
			argv := []string{"/triage-sandbox", string(tt.entry), "{}"}
			if got := readScore(t, exec.Command("cat", "/proc/self/oom_score_adj"), func(start func() (int, error)) error {
				return w.Start(argv, start)
			}); got != tt.want {
				t.Errorf("a child started for %v has score %s, want %s", argv[1:2], got, tt.want)
			}
		})
	}
}

// readScore starts cmd through start (nil: directly) and returns what it
// printed.
func readScore(t *testing.T, cmd *exec.Cmd, start func(func() (int, error)) error) string {
	t.Helper()
	var out strings.Builder
	cmd.Stdout = &out
	run := func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}
	var err error
	if start == nil {
		_, err = run()
	} else {
		err = start(run)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String())
}
