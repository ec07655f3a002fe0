package holderexec

import "time"

// Deadline is the host's clock for a command's timeout. The host is the
// judge: the supervisor in the sandbox enforces the same timeout from the
// command's start, which is later, so when its 124 arrives first (a busy
// host reads its timer late) the deadline has still passed here.
type Deadline struct {
	C     <-chan time.Time // fires at the timeout; nil when there is none
	timer *time.Timer
	start time.Time
	limit time.Duration
}

// StartDeadline starts the clock; start it before the supervisor starts.
// A zero timeout never fires.
func StartDeadline(timeout time.Duration) *Deadline {
	d := &Deadline{start: time.Now(), limit: timeout}
	if timeout > 0 {
		d.timer = time.NewTimer(timeout)
		d.C = d.timer.C
	}
	return d
}

// Passed reports whether the timeout has run out, whether or not C was read.
func (d *Deadline) Passed() bool {
	return d.limit > 0 && time.Since(d.start) >= d.limit
}

// Stop releases the timer.
func (d *Deadline) Stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}
