package oci

import (
	"os"
	"syscall"
)

// dirChanges wakes on each file written or renamed into dir (inotify):
// a send on the channel, coalesced; stop ends it.
func dirChanges(dir string) (<-chan struct{}, func(), error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_MOVED_TO|syscall.IN_CLOSE_WRITE); err != nil {
		_ = syscall.Close(fd)
		return nil, nil, err
	}
	// Non-blocking: the runtime's poller reads it, and Close ends a read.
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
	return ch, func() { _ = f.Close() }, nil
}
