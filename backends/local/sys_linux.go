package local

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func unixAccessW(dir string) error { return unix.Access(dir, unix.W_OK) }

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
