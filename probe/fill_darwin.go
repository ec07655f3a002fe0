package probe

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate claims size bytes for path and returns how many it got. macOS
// has no fallocate: F_PREALLOCATE reserves the blocks (ENOSPC comes here,
// not at a later flush) and ftruncate makes them the file's, as LLVM and
// SQLite do; a filesystem without preallocation gets written zeros. A bare
// ftruncate would make a sparse file, which proves nothing.
func allocate(path string, size int64) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	const chunk = 16 << 20
	var got int64
	for got < size {
		n := min(chunk, size-got)
		st := unix.Fstore_t{Flags: unix.F_ALLOCATEALL, Posmode: unix.F_PEOFPOSMODE, Length: n}
		err := unix.FcntlFstore(f.Fd(), unix.F_PREALLOCATE, &st)
		switch {
		case err == nil:
			err = f.Truncate(got + n)
		case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EINVAL):
			_, err = f.WriteAt(make([]byte, n), got)
		}
		if err != nil {
			return got, err
		}
		got += n
	}
	return got, nil
}
