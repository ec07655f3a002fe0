package fdclean

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// eachOpen marks each descriptor listed in dir above fd close-on-exec.
func eachOpen(dir string, fd int) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("listing open descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return fmt.Errorf("listing open descriptors: %w", err)
	}
	for _, n := range names {
		v, err := strconv.Atoi(n)
		if err != nil || v <= fd {
			continue
		}
		// The listing's own descriptor is closed by now: EBADF is fine.
		if _, err := unix.FcntlInt(uintptr(v), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return fmt.Errorf("marking descriptor %d close-on-exec: %w", v, err)
		}
	}
	return nil
}
