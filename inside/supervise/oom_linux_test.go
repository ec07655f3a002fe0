package supervise

import (
	"strings"
	"testing"
)

// TestCommandIsTheOOMKillersFirstChoice: the command's score is raised so
// that a memory-starved sandbox loses the command, not its supervisor.
func TestCommandIsTheOOMKillersFirstChoice(t *testing.T) {
	// The shell reads its own score once the supervisor has had time to set it.
	res, out, errOut, _ := runSpec(t, Spec{Argv: []string{"sh", "-c", "sleep 0.2; cat /proc/$$/oom_score_adj"}})
	if res.ExitCode != 0 || strings.TrimSpace(out) != commandOOMScoreAdj {
		t.Fatalf("exit %d, the command's oom_score_adj is %q (%s), want %s", res.ExitCode, out, errOut, commandOOMScoreAdj)
	}
}
