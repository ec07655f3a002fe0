//go:build !linux && !darwin

package supervise

import (
	"syscall"
)

// becomeSubreaper does nothing: without a subreaper (macOS has none) the
// tree is only the command's process group.
func becomeSubreaper() {}

// sysProcAttr puts the command in its own process group, the tree's only
// handle here.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// tree is the command (pid, also its process group).
type tree struct {
	pid, self int
	tag       string
	ws        syscall.WaitStatus
	err       error
}

// waitExited blocks until the command has exited and reaps it: there is no
// portable wait-without-reaping.
func (t *tree) waitExited() {
	for {
		_, err := syscall.Wait4(t.pid, &t.ws, 0, nil)
		if err != syscall.EINTR {
			t.err = err
			return
		}
	}
}

// collect returns the status waitExited reaped.
func (t *tree) collect() (syscall.WaitStatus, error) { return t.ws, t.err }

// kill sends sig (none when 0) to the process group and returns 1 while
// the group still has members, 0 once it is gone.
func (t *tree) kill(sig syscall.Signal) int {
	if t.pid <= 1 {
		return 0
	}
	if sig != 0 {
		_ = syscall.Kill(-t.pid, sig)
	}
	if syscall.Kill(-t.pid, 0) == nil {
		return 1
	}
	return 0
}

// treeEnv: no tag to find the tree by here.
func treeEnv(env []string) ([]string, string) { return env, "" }
