//go:build !linux

package fdclean

func closeOnExecAbove(fd int) error { return eachOpen("/dev/fd", fd) }
