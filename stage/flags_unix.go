//go:build unix

package stage

import (
	"os"
	"syscall"
)

const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)

func newFile(fd int, name string) *os.File { return os.NewFile(uintptr(fd), name) }
