package confine

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Started by root, the helper is host uid 0, which its user namespace does
// not map (only the sandbox's ids are mapped): a file it created would get
// an owner the filesystem cannot record (EOVERFLOW). It keeps that uid for
// its host lookups, which reach root-only directories by owner permission,
// and creates every file on a thread of its own whose filesystem ids are
// the sandbox's.

// asOwner runs fn on a new OS thread whose filesystem ids are uid and gid.
// The thread exits with fn: from uid and gid it could not return to an id
// the namespace does not map, so it must not serve anything else.
func asOwner(uid, gid int, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the runtime ends the thread with the goroutine.
		runtime.LockOSThread()
		if err := setFSIDs(uid, gid); err != nil {
			done <- err
			return
		}
		done <- fn()
	}()
	return <-done
}

// setFSIDs sets the calling thread's filesystem ids. setfsuid and setfsgid
// report no error, only the previous id, so a second call reads the result.
func setFSIDs(uid, gid int) error {
	unix.Setfsgid(gid)
	if got, _ := unix.SetfsgidRetGid(-1); got != gid {
		return fmt.Errorf("setfsgid %d: the thread's fsgid is %d", gid, got)
	}
	unix.Setfsuid(uid)
	if got, _ := unix.SetfsuidRetUid(-1); got != uid {
		return fmt.Errorf("setfsuid %d: the thread's fsuid is %d", uid, got)
	}
	return nil
}
