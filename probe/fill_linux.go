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
