package oci

import (
	"os"

	"golang.org/x/sys/unix"
)

// dirChanges sends on its channel when a file in dir is written or
// renamed into it (inotify), so a wait for the runtime's pid file sleeps
// until the runtime writes it. changed is nil where inotify is not to be
// had (its limits reached): the caller then polls. stop ends it.
func dirChanges(dir string) (changed <-chan struct{}, stop func()) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, func() {}
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		return nil, func() {}
	}
	// Non-blocking: the runtime's poller waits for it, and Close ends a
	// Read under way.
	f := os.NewFile(uintptr(fd), "inotify "+dir)
	ch := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	// Closed beside the caller: a Close waits for the Read it ends, which
	// took 10-20 ms on a busy machine, in the start's path.
	return ch, func() { go f.Close() }
}
