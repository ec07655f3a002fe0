package holderexec

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
)

// ExitKilled is the shell-style code of a process ended by SIGKILL: an OOM
// kill, or its sandbox's end.
const ExitKilled = exitcode.Killed

// The other shell-style codes a run's result gives, the one table of them
// for every backend's run.
const (
	exitTimedOut = exitcode.Timeout
	exitCanceled = exitcode.Interrupted
	// Codes past signalBase and below signalEnd say the signal that ended
	// the command.
	signalBase = exitcode.SignalBase
	signalEnd  = exitcode.SignalBase + 32
)

// ExitStatus is a supervisor that ended with a non-zero shell-style code.
type ExitStatus struct{ Code int }

func (e *ExitStatus) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitOf reads a waited process's error as a Starter's Wait returns it:
// nil, an *ExitStatus with the shell's code (128+n for signal n), or err
// itself when it is not an exit.
func ExitOf(err error) error {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &ExitStatus{Code: signalBase + int(ws.Signal())}
	}
	return &ExitStatus{Code: ee.ExitCode()}
}

// NotStarted is a supervisor that ended before it started the command:
// nothing ran and no output was passed on.
type NotStarted struct {
	// Why is what the supervisor (or the runtime that started it) said.
	Why string
}

func (e *NotStarted) Error() string { return "the sandbox could not start the command: " + e.Why }

// signalOf is the signal a shell-style code says, or 0.
func signalOf(code int) int {
	if code > signalBase && code < signalEnd {
		return code - signalBase
	}
	return 0
}
