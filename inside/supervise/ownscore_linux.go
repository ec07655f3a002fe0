package supervise

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// OwnScore is this process's own oom_score_adj, written through a
// descriptor, and raised to commandOOMScoreAdj around a command's fork,
// so that the command inherits it from its first instruction, and put
// back right after. preferForOOM's write to a forked command's /proc
// comes too late for what the command forks at once (a shell's first
// child read the supervisor's 500 under load, CI), and cannot come at all
// where a confinement keeps /proc read-only (Landlock in the local
// backend's holder): there the descriptor is opened before it. Putting
// the score back needs no privilege: a process may lower its score to
// where a privileged writer last put it, which is at or below the score
// it had.
type OwnScore struct {
	mu   sync.Mutex
	f    *os.File
	base string
}

// OpenOwnScore opens this process's oom_score_adj for writing and checks
// that a write takes. Call it before the confinement.
func OpenOwnScore() (*OwnScore, error) {
	const path = "/proc/self/oom_score_adj"
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the OOM score: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the OOM score: %w", err)
	}
	o := &OwnScore{f: f, base: strings.TrimSpace(string(b))}
	if err := o.write(o.base); err != nil {
		_ = f.Close()
		return nil, err
	}
	return o, nil
}

// Raised runs fork with this process's score at commandOOMScoreAdj, so
// that what fork starts inherits it, and puts the score back after; it
// reports whether fork ran raised. One at a time: two forks' raises must
// not interleave with a put-back. A nil OwnScore runs fork as it is.
func (o *OwnScore) Raised(fork func()) (raised bool, err error) {
	if o == nil {
		fork()
		return false, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.write(commandOOMScoreAdj); err != nil {
		fork()
		return false, err
	}
	fork()
	return true, o.write(o.base)
}

// write sets the score; the kernel reads a whole value from each write.
func (o *OwnScore) write(v string) error {
	if _, err := o.f.Write([]byte(v)); err != nil {
		return fmt.Errorf("setting the OOM score to %s: %w", v, err)
	}
	return nil
}
