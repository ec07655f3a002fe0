package rootfs

import "golang.org/x/sys/unix"

// oPath opens a directory only to walk from it.
const oPath = unix.O_PATH

func syncFS(fd int) error { return unix.Syncfs(fd) }
