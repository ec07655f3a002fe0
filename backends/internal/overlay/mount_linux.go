//go:build linux

package overlay

import (
	"errors"

	"golang.org/x/sys/unix"
)

const (
	msNoSUID   = unix.MS_NOSUID
	msNoDev    = unix.MS_NODEV
	msReadOnly = unix.MS_RDONLY
	msNoExec   = unix.MS_NOEXEC
)

// errNotMounted: nothing (any more) is mounted at the path.
var errNotMounted = errors.New("not a mount point")

func platformSupported() error { return nil }

func mount(source, target, fstype string, flags uintptr, data string) error {
	return unix.Mount(source, target, fstype, flags, data)
}

// detach lazily unmounts path; errNotMounted when nothing is mounted there.
func detach(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return errNotMounted
	}
	return err
}
