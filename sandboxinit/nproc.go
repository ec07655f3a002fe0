package sandboxinit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// limitProcs sets this process's RLIMIT_NPROC (soft and hard) to n before
// the command starts, which inherits it; 0 leaves it. Lowering needs no
// privilege; a limit already lower stays (raising it would fail).
func limitProcs(n int64) error {
	if n <= 0 {
		return nil
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &cur); err != nil {
		return fmt.Errorf("reading the process limit: %w", err)
	}
	lim := unix.Rlimit{Cur: min(uint64(n), cur.Max), Max: min(uint64(n), cur.Max)}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
		return fmt.Errorf("setting the process limit to %d: %w", n, err)
	}
	return nil
}
