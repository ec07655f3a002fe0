//go:build !linux

package supervise

import "syscall"

// becomeSubreaper does nothing: without a subreaper (macOS has none) the
// tree's handles are its process group (and, on macOS, its tag).
func becomeSubreaper() bool { return false }

// sweepStrays needs Linux's /proc.
func sweepStrays() {}

// sysProcAttr puts the command in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// tree is the command (pid, also its process group) and, where the OS
// needs one, the tag its processes carry.
type tree struct {
	pid, self int
	tag       string
	ws        syscall.WaitStatus
	err       error
	// within runs the kills on the thread that started the command;
	// others is Linux's (a tree found by parent links).
	within func(func())
	others func(pid int) bool
	alone  bool // never known here (see tree_linux.go)
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

// termThenKill is kill(SIGTERM) and, when it leaves nothing of the tree
// (the usual end), the group's SIGKILL that starts killAll, in one trip
// to the thread that started the command instead of two. It returns what
// kill(SIGTERM) does, and whether the SIGKILL went.
func (t *tree) termThenKill() (left int, killed bool) {
	t.within(func() {
		left = t.killHere(syscall.SIGTERM)
		if left == 0 && t.pid > 1 {
			_ = syscall.Kill(-t.pid, syscall.SIGKILL)
			killed = true
		}
	})
	return left, killed
}
