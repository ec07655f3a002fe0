//go:build linux

package sandboxinit

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
)

// newWarden makes the holder a child subreaper, so that the orphans of a
// dead supervisor come to it, and returns its warden. A kernel without
// subreapers (gVisor's) will do when orphans come to the sandbox's pid 1
// anyway: the holder itself, or the init right above it.
//
// Its thread is th, or a new one when th is nil.
func newWarden(th *Thread) (*warden, error) {
	if th == nil {
		var err error
		if th, err = NewThread(nil); err != nil {
			return nil, err
		}
	}
	w := &warden{self: os.Getpid(), initAbove: os.Getppid() == 1 && os.Getpid() != 1, started: map[int]bool{},
		thread: th, changed: make(chan struct{}, 1)}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		if w.self != 1 && !w.initAbove {
			return nil, fmt.Errorf("making the holder a child subreaper: %w", err)
		}
		w.noSubreaper = true
	}
	return w, nil
}

// watch sweeps every interval until ctx ends. Only in a sandbox with a
// process namespace of its own (the holder is pid 1 or its child): a scan
// of the host's whole process table is not for polling.
func (w *warden) watch(ctx context.Context) {
	if w.self != 1 && !w.initAbove {
		return
	}
	t := time.NewTimer(w.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.changed:
			// A faster poll starts now, not after the slow one's wait;
			// the sweep covers the change's moment.
			w.sweep()
		case <-t.C:
			w.sweep()
		}
		t.Reset(w.interval())
	}
}

// sweepLocked kills the leftovers, their descendants first-found-first, and
// reaps those that are the holder's children; it repeats while killing
// reparents more to the holder (bounded).
func (w *warden) sweepLocked() {
	if w.resident > 0 {
		return // see residentBegins
	}
	for range 20 {
		procs := readProcs()
		left := w.leftovers(procs, w.settled(procs, time.Now()))
		if len(left) == 0 {
			return // nothing to kill: no trip to the warden's thread
		}
		alive := 0
		w.onThread(func() {
			for _, pid := range left {
				if !procs[pid].zombie {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					alive++
				}
			}
		})
		w.killed += alive
		for _, pid := range left {
			if procs[pid].ppid == w.self {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, 0, nil)
			}
		}
	}
}

// readProcs reads every process's parent and state from /proc.
func readProcs() map[int]proc {
	procs := map[int]proc{}
	for _, p := range supervise.Processes() {
		procs[p.PID] = proc{ppid: p.PPID, zombie: p.Zombie}
	}
	return procs
}
