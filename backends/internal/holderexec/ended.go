package holderexec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrStoppedOutside marks a sandbox stopped by something outside it (a
// runtime's or daemon's stop or kill, a kill from the host), told by
// evidence, never assumed.
var ErrStoppedOutside = errors.New("the sandbox was stopped from outside")

// HolderEnd is how a sandbox's holder ended under a command, as its
// backend saw it.
type HolderEnd struct {
	// Code is the holder's shell-style exit code (128+n for signal n).
	Code int
	// KilledByHost: the backend itself killed the sandbox.
	KilledByHost bool
	// OOMKilled: the kernel's OOM killer killed in the sandbox.
	OOMKilled bool
	// Said is what the holder printed.
	Said []byte
	// Outside says who outside stops this backend's sandboxes, for the
	// message; Record is the backend's own record of a stop, if it has
	// one (the Docker daemon's kill event).
	Outside, Record string
}

// lifetimeLine is what the holder prints when it ends the sandbox at its
// lifetime (sandboxinit).
var lifetimeLine = []byte("sandbox lifetime exceeded")

// Err explains the end. Only SIGKILL says "from outside": the holder is
// the sandbox's pid 1, which takes and drops every other signal, and to
// which the kernel delivers no SIGKILL from inside its pid namespace; the
// holder's own ends (its lifetime, a cut lifeline) are told by what it
// printed or by the host that cut it. Anything else ended under the
// command, which may have caused it: the result is unknown, never
// "outside".
func (e HolderEnd) Err() error {
	switch {
	case e.Record != "":
		return fmt.Errorf("%w (%s); the result is unknown, run it again", ErrStoppedOutside, e.Record)
	case bytes.Contains(e.Said, lifetimeLine):
		return errors.New("the sandbox reached its lifetime and was ended under the command; the result is unknown")
	case e.Code == ExitKilled && e.OOMKilled:
		return errors.New("the sandbox ran out of memory and its holder was killed (exit 137); the result is unknown")
	case e.Code == ExitKilled && !e.KilledByHost:
		return fmt.Errorf("%w: its holder, the sandbox's pid 1, was killed by SIGKILL, which nothing inside the sandbox can send it (%s); the result is unknown, run it again",
			ErrStoppedOutside, e.Outside)
	}
	return fmt.Errorf("the sandbox's holder ended under the command (exit %d)%s; the result is unknown", e.Code, SaidLine(e.Said))
}

// CodeOf is the shell-style code of an ended process (128+n for signal n).
func CodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return signalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}
