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

// fsOwner is one OS thread whose filesystem ids are uid and gid, on which
// Enter creates every file: one thread for the whole build, not one per
// file (a thread's start and exit each time, thirty-odd a sandbox). The
// thread ends with stop: from uid and gid it could not return to an id the
// namespace does not map, so it serves nothing but run's functions.
type fsOwner struct {
	jobs chan func() error
	errs chan error
}

func newFSOwner(uid, gid int) (*fsOwner, error) {
	o := &fsOwner{jobs: make(chan func() error), errs: make(chan error)}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: the runtime ends the thread with the goroutine.
		runtime.LockOSThread()
		if err := setFSIDs(uid, gid); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for fn := range o.jobs {
			o.errs <- fn()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return o, nil
}

// run runs fn on the owner's thread and returns its error.
func (o *fsOwner) run(fn func() error) error {
	o.jobs <- fn
	return <-o.errs
}

// stop ends the thread once it has finished what it runs.
func (o *fsOwner) stop() { close(o.jobs) }

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
