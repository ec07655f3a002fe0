package confine

import (
	"fmt"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/protocol/localplan"
)

// setRlimits applies the plan's limits to the process. syscall.Setrlimit,
// not a raw prlimit: Go restores the NOFILE soft limit it found at start
// in the children it execs, unless the limit was set through it.
func setRlimits(rs []Rlimit) error {
	for _, r := range rs {
		res, ok := localplan.RlimitResource(r.Name)
		if !ok {
			return fmt.Errorf("rlimit %s: unknown", r.Name)
		}
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: r.Soft, Max: r.Hard}); err != nil {
			return fmt.Errorf("rlimit %s (soft %d, hard %d): %w", r.Name, r.Soft, r.Hard, err)
		}
	}
	return nil
}
