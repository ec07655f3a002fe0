//go:build !linux

package rootfs

import "golang.org/x/sys/unix"

// oPath: without O_PATH, a read-only open walks as well.
const oPath = unix.O_RDONLY

func syncFS(fd int) error { return unix.Fsync(fd) }
