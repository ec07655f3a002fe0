package probe

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// reserve claims n bytes at off in f: fallocate, or written zeros where the
// filesystem has none.
func reserve(f *os.File, off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		_, err = f.WriteAt(make([]byte, n), off)
	}
	return err
}

// createEmpty makes an empty regular file in one call (mknod; open and
// close are two): under gVisor every call is a trap, and the inode fill
// makes tens of thousands of files.
func createEmpty(path string) error {
	return unix.Mknod(path, unix.S_IFREG|0o600, 0)
}
