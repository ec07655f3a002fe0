//go:build linux

package supervise

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The tree's scans read /proc after every command, on the path to its
// exit code: os.Open and os.ReadFile try each file on the poller first
// (epoll_ctl fails for /proc files, then two fcntls undo it), ten
// syscalls a file where open, read and close are three, each through the
// sandbox's seccomp filter. These read with the three.

// readProcFile is the whole content of a /proc file.
func readProcFile(path string) ([]byte, error) {
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, err
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// readDirNames lists dir's entries (no "." or "..").
func readDirNames(dir string) ([]string, error) {
	fd, err := openRetry(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.ReadDirent(fd, buf)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, err
		case n <= 0:
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
