package probe

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// reserve claims n bytes at off (the file's end) in f. macOS has no
// fallocate: F_PREALLOCATE reserves the blocks (ENOSPC comes here, not at
// a later flush) and ftruncate makes them the file's, as LLVM and SQLite
// do; a filesystem without preallocation gets written zeros. A bare
// ftruncate would make a sparse file, which proves nothing.
func reserve(f *os.File, off, n int64) error {
	st := unix.Fstore_t{Flags: unix.F_ALLOCATEALL, Posmode: unix.F_PEOFPOSMODE, Length: n}
	err := unix.FcntlFstore(f.Fd(), unix.F_PREALLOCATE, &st)
	switch {
	case err == nil:
		return f.Truncate(off + n)
	case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EINVAL):
		_, err = f.WriteAt(make([]byte, n), off)
	}
	return err
}

// createEmpty makes an empty regular file (macOS's mknod is for devices and
// needs root).
func createEmpty(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}
