package fdclean

import (
	"errors"
	"fmt"
	"math"

	"golang.org/x/sys/unix"
)

func closeOnExecAbove(fd int) error {
	err := unix.CloseRange(uint(fd+1), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("marking inherited descriptors close-on-exec: %w", err)
	}
	// Kernels before 5.11 (or gVisor without the flag): one by one.
	return eachOpen("/proc/self/fd", fd)
}
