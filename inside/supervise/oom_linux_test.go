package supervise

import (
	"strings"
	"testing"
	"time"
)

// TestCommandIsTheOOMKillersFirstChoice: the command's score is raised so
// that a memory-starved sandbox loses the command, not its supervisor.
// With the supervisor's own score (Spec.Score) the command has it from its
// first instruction; without, once the supervisor's write through /proc
// comes, which a command's first child can beat (Within here holds that
// write back past the command's read).
func TestCommandIsTheOOMKillersFirstChoice(t *testing.T) {
	score, err := OpenOwnScore()
	if err != nil {
		t.Fatal(err)
	}
	late := func(f func()) {
		f()
		time.Sleep(300 * time.Millisecond)
	}
	tests := []struct {
		name string
		spec Spec
	}{
		{"written once forked", Spec{Argv: []string{"sh", "-c", "sleep 0.2; cat /proc/$$/oom_score_adj"}}},
		{"inherited at the fork", Spec{Argv: []string{"sh", "-c", "cat /proc/self/oom_score_adj"}, Within: late, Score: score}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, out, errOut, _ := runSpec(t, tt.spec)
			if res.ExitCode != 0 || strings.TrimSpace(out) != commandOOMScoreAdj {
				t.Fatalf("exit %d, the command's oom_score_adj is %q (%s), want %s", res.ExitCode, out, errOut, commandOOMScoreAdj)
			}
		})
	}
}
