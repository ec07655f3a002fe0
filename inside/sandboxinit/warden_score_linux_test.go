package sandboxinit

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestWardenRaisesTheScoreOfSupervisorsOnly: with the holder's own score
// (the local backend's), a supervisor the holder starts is the OOM
// killer's first choice with its command, from its first instruction; an
// exporter, which copies the outputs back, keeps the holder's score.
func TestWardenRaisesTheScoreOfSupervisorsOnly(t *testing.T) {
	score, err := supervise.OpenOwnScore()
	if err != nil {
		t.Fatal(err)
	}
	th, err := NewThread(nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &warden{started: map[int]bool{}, thread: th, score: score}
	base := readScore(t, exec.Command("cat", "/proc/self/oom_score_adj"), nil)
	tests := []struct {
		entry protocol.Entry
		want  string
	}{
		{protocol.EntryExec, "1000"},
		{protocol.EntryExport, base},
	}
	for _, tt := range tests {
		t.Run(string(tt.entry), func(t *testing.T) {
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
