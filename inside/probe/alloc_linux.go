package probe

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault a range in
// writable, as MAP_POPULATE does at mmap, but after MADV_HUGEPAGE.
const madvPopulateWrite = 23

// allocResident makes n bytes resident. The pages are faulted in inside
// system calls: touching a page at a time costs a fault each, seconds per
// GiB on a virtual machine. Huge pages where the kernel has them (with THP
// on madvise, as here, only when asked) halve that again: 2.25 GiB took
// 0.44× the wall and 0.46× the CPU of MAP_POPULATE's 4 KiB pages. The
// memory is charged to the memory cgroup the same either way, and past a
// memory limit the kernel's OOM killer ends the process, as with any
// other allocation.
func allocResident(n int64, errOut io.Writer) int {
	return allocResidentPages(n, errOut, true)
}

// allocResidentPages is allocResident, with huge pages tried first when
// huge is set.
func allocResidentPages(n int64, errOut io.Writer, huge bool) int {
	const chunk = 64 << 20
	var keep [][]byte
	for done := int64(0); done < n; done += chunk {
		size := int(min(chunk, n-done))
		var b []byte
		var err error
		if huge {
			b, huge, err = allocHuge(size)
		}
		if !huge {
			b, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE,
				unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		}
		if err != nil {
			fmt.Fprintf(errOut, "alloc: %v after %d bytes\n", err, done)
			return 1
		}
		keep = append(keep, b)
	}
	_ = len(keep)
	return 0
}

// allocHuge maps size bytes, asks for huge pages and faults them in. ok is
// false where the kernel has no MADV_POPULATE_WRITE (older kernels, gVisor,
// a filter that refuses it): the caller goes on with MAP_POPULATE. Any
// other failure to populate (ENOMEM where no OOM kill came) is answered as
// a program would meet it: by touching every page, whose faults the limit
// then judges; a failure is never taken for the limit itself.
func allocHuge(size int) (b []byte, ok bool, err error) {
	b, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, true, err
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE) // a hint: without it, 4 KiB pages
	perr := unix.Madvise(b, madvPopulateWrite)
	switch {
	case perr == nil:
		return b, true, nil
	case errors.Is(perr, unix.EINVAL) || errors.Is(perr, unix.ENOSYS) || errors.Is(perr, unix.EPERM):
		_ = unix.Munmap(b)
		return nil, false, nil
	}
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return b, true, nil
}
