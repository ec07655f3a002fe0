package sandboxinit

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// rlimitResources are the host's numbers for protocol.RlimitNames (the
// supervisor runs on Linux in a sandbox, on macOS under seatbelt).
var rlimitResources = map[string]int{
	"CORE": unix.RLIMIT_CORE, "FSIZE": unix.RLIMIT_FSIZE, "NOFILE": unix.RLIMIT_NOFILE, "NPROC": unix.RLIMIT_NPROC,
}

// setRlimits sets each limit on this process, soft and hard, before the
// command starts, which inherits them. It only lowers: the hard limit
// becomes the spec's value unless it is already lower (raising it would
// fail without privilege), and the soft limit follows the hard one, as
// the container backends give a command soft = hard. syscall.Setrlimit,
// not unix's: Go restores the NOFILE soft limit it found at start in the
// children it execs unless the limit was set through it.
func setRlimits(rs []protocol.Rlimit) error {
	for _, r := range rs {
		res, ok := rlimitResources[r.Name]
		if !ok {
			return fmt.Errorf("rlimit %s: unknown here", r.Name)
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(res, &cur); err != nil {
			return fmt.Errorf("reading RLIMIT_%s: %w", r.Name, err)
		}
		v := min(r.Value, uint64(cur.Max))
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setting RLIMIT_%s to %d: %w", r.Name, v, err)
		}
	}
	return nil
}
