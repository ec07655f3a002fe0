package supervise

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestOwnScoreRaisedAroundTheFork: what starts under Raised inherits the
// OOM killer's first choice from its first instruction (no write to its
// /proc needed), and this process's own score is back where it was.
func TestOwnScoreRaisedAroundTheFork(t *testing.T) {
	score, err := OpenOwnScore()
	if err != nil {
		t.Fatal(err)
	}
	own := func() string {
		b, err := os.ReadFile("/proc/self/oom_score_adj")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	base := own()
	if base == commandOOMScoreAdj {
		t.Fatalf("this test's own score is already %s: nothing to tell apart", base)
	}
	tests := []struct {
		name  string
		score *OwnScore
		want  string
	}{
		{"raised", score, commandOOMScoreAdj},
		{"not raised (nil)", nil, base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("cat", "/proc/self/oom_score_adj")
			var out strings.Builder
			cmd.Stdout = &out
			var startErr error
			raised, err := tt.score.Raised(func() { startErr = cmd.Start() })
			if err != nil {
				t.Fatal(err)
			}
			if raised != (tt.score != nil) {
				t.Errorf("Raised says raised=%v for a score %v", raised, tt.score)
			}
			if startErr != nil {
				t.Fatal(startErr)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(out.String()); got != tt.want {
				t.Errorf("the child's score is %s, want %s", got, tt.want)
			}
			if got := own(); got != base {
				t.Errorf("this process's score is %s after the fork, want it back at %s", got, base)
			}
		})
	}
}
