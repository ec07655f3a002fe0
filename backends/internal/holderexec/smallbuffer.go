package holderexec

import (
	"bytes"
	"sync"
)

// SmallBuffer keeps the first 4 KiB written to it, safely from several
// goroutines: what a holder or a runtime printed, for one error line.
type SmallBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

// Write keeps what fits and never fails, so the writer never blocks.
func (l *SmallBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := 4096 - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
		select {
		case l.changedLocked() <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// Changed receives after a write that kept something: a waiter for a line
// learns of it at once instead of at its next poll.
func (l *SmallBuffer) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changedLocked()
}

func (l *SmallBuffer) changedLocked() chan struct{} {
	if l.changed == nil {
		l.changed = make(chan struct{}, 1)
	}
	return l.changed
}

func (l *SmallBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Bytes is a copy of what was kept.
func (l *SmallBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.buf.Bytes()...)
}
