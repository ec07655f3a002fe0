package selftest

import (
	"io"
	"os/exec"
	"syscall"

	"github.com/creack/pty"
)

// newControllingTTY makes a fresh pty the controlling terminal of cmd (as
// its stdin, in a new session) and returns what to close afterwards.
func newControllingTTY(cmd *exec.Cmd) (io.Closer, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	return closers{slave, master}, nil
}
