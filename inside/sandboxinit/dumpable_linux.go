package sandboxinit

import (
	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// undumpable keeps processes of the same identity from attaching to the
// holder or taking its descriptors (ptrace, pidfd_getfd, /proc/PID/fd).
func undumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

// guardFromCommand keeps the sandbox's commands, which run as the same
// identity, from attaching to this helper or reaching its descriptors
// through /proc (the supervisor's export pipe, the holder's channel). A
// helper started as root first takes the sandbox identity (id, nil for
// none): its standard streams stay root's.
func guardFromCommand(id *protocol.Identity) error {
	if err := takeIdentity(id); err != nil {
		return err
	}
	return undumpable()
}
