// Package idlemem lowers the resident memory of a long-lived process of
// ours that waits idle beside or inside a sandbox (the holder, the local
// helper, the docker watcher): a thousand idle sessions pay it a thousand
// times. Most of such a process's RSS is its own binary's text and
// read-only data, touched once by its start and set-up and then idle; the
// rest is heap the set-up left as garbage. Release returns both: the
// garbage to the OS, and the mappings of the binary's read-only pages (the
// page cache keeps them, shared; a page the process touches again comes
// back by a minor fault). Writable mappings are never touched.
package idlemem

import (
	"runtime/debug"
	"sync"
	"time"
)

// Release frees the set-up's garbage and drops the process's mappings of
// its binary's read-only pages. It is best effort: an error only means
// less was released, never a changed process.
func Release() error {
	debug.FreeOSMemory()
	return dropText()
}

// Quiet calls Release once the process has been quiet for a while, and
// again at a longer interval while it stays quiet (what wakes an idle
// process, a poll, touches some pages again): each Busy restarts the
// first wait, so a burst of work releases once, after it.
type Quiet struct {
	mu           sync.Mutex
	after, every time.Duration
	timer        *time.Timer
	stopped      bool
}

// NewQuiet is a Quiet that releases after a quiet while of after, then
// every every (0: once).
func NewQuiet(after, every time.Duration) *Quiet { return &Quiet{after: after, every: every} }

// Busy says the process just worked: it releases once quiet again.
func (q *Quiet) Busy() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return
	}
	if q.timer == nil {
		q.timer = time.AfterFunc(q.after, q.release)
		return
	}
	q.timer.Reset(q.after)
}

func (q *Quiet) release() {
	_ = Release()
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.stopped && q.every > 0 {
		q.timer.Reset(q.every)
	}
}

// Stop cancels the releases not yet done.
func (q *Quiet) Stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	if q.timer != nil {
		q.timer.Stop()
	}
}
