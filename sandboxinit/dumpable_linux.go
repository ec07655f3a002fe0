package sandboxinit

import "golang.org/x/sys/unix"

// undumpable keeps processes of the same identity from attaching to the
// holder or taking its descriptors (ptrace, pidfd_getfd, /proc/PID/fd).
func undumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

// guardFromCommand keeps the sandbox's commands, which run as the same
// identity, from attaching to this helper or reaching its descriptors
// through /proc (the supervisor's export pipe, the holder's channel).
func guardFromCommand() error { return undumpable() }
