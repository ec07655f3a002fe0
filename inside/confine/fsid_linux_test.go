package confine

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// The owner's thread creates as the sandbox's ids, every time it is asked,
// and passes fn's error back; the caller's own thread keeps its ids.
func TestFSOwnerRunsAsTheSandboxIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting another thread's fsuid needs root")
	}
	const id = 65534
	o, err := newFSOwner(id, id)
	if err != nil {
		t.Fatal(err)
	}
	defer o.stop()
	for i := range 3 {
		var uid, gid int
		if err := o.run(func() error {
			uid, _ = unix.SetfsuidRetUid(-1)
			gid, _ = unix.SetfsgidRetGid(-1)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if uid != id || gid != id {
			t.Errorf("run %d: fsuid %d fsgid %d, want %d", i, uid, gid, id)
		}
	}
	want := errors.New("from fn")
	if err := o.run(func() error { return want }); !errors.Is(err, want) {
		t.Errorf("run returned %v, want fn's error", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if mine, _ := unix.SetfsuidRetUid(-1); mine != os.Geteuid() {
		t.Errorf("the caller's thread has fsuid %d, want %d", mine, os.Geteuid())
	}
}
