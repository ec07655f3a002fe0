package oci

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
)

// A foreground `runc run` stays resident for the sandbox's life (11 MiB
// here) only to wait for the holder and delete the container's state
// after it. Detached, the runtime ends once the holder runs; what it did
// is done here instead:
//
//   - the lifeline is unchanged: the holder's stdin is our pipe (runc
//     passes the standard streams through without a terminal), so the
//     owner's death (kill -9 too) still ends the holder and its sandbox;
//   - the holder, orphaned when the runtime ends, comes to this process,
//     a child subreaper, which waits for it by its pid (never wait(-1):
//     os/exec's waits stay exact) and keeps how it ended;
//   - its state is deleted by Close (`runtime delete`), and after the
//     owner's death by the next start's or `gc`'s sweep, which already
//     deletes the state a dead owner left (Sweep).
//
// A runtime whose init is not a host process (runsc: its pid file names
// its kernel, not the holder, whose end the host would then not learn)
// keeps its foreground run.
//
// A one-shot sandbox (backends.StartOptions.OneShot: the cold `run` of
// one command) keeps it too: its runtime lives only as long as the one
// command, and a foreground run deletes the container itself when the
// holder ends, which saves the `runtime delete` process a detached
// sandbox's Close pays (about 10 ms of a cold run). Its kill -9 story is
// the foreground one: the cut lifeline ends the holder, and the runtime
// then deletes the container; the sweep removes the bundle.

// detaches reports whether sandboxes of the runtime start detached.
func detaches(t runtimes.Traits) bool { return t.InitOnHost }

// subreaper is whether this process is a child subreaper (prctl once).
var subreaper = sync.OnceValue(func() bool {
	return setSubreaper() == nil
})

// becomeSubreaper makes this process the child subreaper of what it
// starts: a detached holder comes to it when its runtime ends. A process
// that cannot be one keeps the runtime in the foreground.
func becomeSubreaper() bool { return subreaper() }

// awaitHolder waits for the runtime and, when it started the holder
// detached, for the holder, then closes Gone.
func (s *sandbox) awaitHolder() {
	defer close(s.Gone)
	if !s.detached {
		_ = s.run.Wait()
		return
	}
	// Not Wait: the holder keeps the output pipe open, which Wait would
	// wait for.
	st, err := s.run.Process.Wait()
	if err != nil || !st.Success() {
		s.heldEnd = st
		return
	}
	pid := s.readPid()
	if pid <= 0 {
		return
	}
	s.heldPidV.Store(int64(pid))
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	if st, err := p.Wait(); err == nil {
		s.heldEnd = st
	}
}

// readPid is the pid the runtime wrote in its pid file (0: none).
func (s *sandbox) readPid() int {
	b, err := os.ReadFile(filepath.Join(s.dir, "pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil {
		return 0
	}
	return pid
}

// heldPid is the detached holder's pid, 0 before it is known.
func (s *sandbox) heldPid() int { return int(s.heldPidV.Load()) }

// endState is how the holder ended: its own end when detached, else the
// foreground runtime's (which ends as its init does). Read after Gone.
func (s *sandbox) endState() *os.ProcessState {
	if s.detached {
		return s.heldEnd
	}
	return s.run.ProcessState
}
