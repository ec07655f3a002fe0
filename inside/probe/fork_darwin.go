package probe

import "syscall"

// forkPaused starts a child that sleeps. A raw fork is unsafe in a Go
// program on macOS (libSystem owns the system calls), so the child execs
// /bin/sleep, which every macOS has and which costs far less than another
// Go process. opForkBomb kills and reaps it.
func forkPaused() (int, error) {
	return syscall.ForkExec("/bin/sleep", []string{"sleep", "600"}, nil)
}
