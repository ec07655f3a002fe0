package selftest

import (
	"fmt"
	"strings"
)

// resultControls: what a run gives back: exit status, stderr, timeouts.
func resultControls() []Check {
	return []Check{
		{ID: "C-10", Name: "exit status and stderr come back", Category: "controls",
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				if ev.Result.ExitCode != statusExitCode {
					return false, fmt.Sprintf("exit %d, want %d", ev.Result.ExitCode, statusExitCode)
				}
				if !strings.Contains(ev.Stderr, statusMarker) {
					return false, "stderr marker missing"
				}
				return true, fmt.Sprintf("exit %d and stderr marker returned", statusExitCode)
			},
			Fix: "the backend must pass exit codes and stderr through"},
		{ID: "C-10b", Name: "a timeout is reported as a timeout", Category: "controls", Phase: PhaseTimeout,
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				return ev.Result.TimedOut, fmt.Sprintf("timed out: %v, exit %d", ev.Result.TimedOut, ev.Result.ExitCode)
			},
			Fix: "the backend must report timeouts"},
	}
}
