//go:build linux

package holderexec

import (
	"os"
	"syscall"
)

// holderPipe is a pipe for one of the command's standard files: the end
// kept here (the read end when keepRead) on this process's poller, as
// os.Pipe's, and the end passed to the holder a plain blocking descriptor
// that never joins the poller. os.Pipe's passed end would be put on it,
// taken off it again to be passed (Fd) and removed from it at its close:
// six syscalls an end on every session command, for nothing.
func holderPipe(keepRead bool) (kept, passed *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	k, q := p[1], p[0]
	if keepRead {
		k, q = p[0], p[1]
	}
	if err := syscall.SetNonblock(k, true); err != nil {
		_ = syscall.Close(k)
		_ = syscall.Close(q)
		return nil, nil, os.NewSyscallError("setnonblock", err)
	}
	return os.NewFile(uintptr(k), "|kept"), os.NewFile(uintptr(q), "|passed"), nil
}
