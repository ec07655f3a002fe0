package probe

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate claims size bytes for path and returns how many it got.
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
		err := unix.Fallocate(int(f.Fd()), 0, got, n)
		if errors.Is(err, unix.EOPNOTSUPP) {
			_, err = f.WriteAt(make([]byte, n), got)
		}
		if err != nil {
			return got, err
		}
		got += n
	}
	return got, nil
}
