package probe

import (
	"fmt"
	"io"
	"syscall"
)

// allocResident makes n bytes resident. MAP_POPULATE faults the pages in
// inside one system call: touching a page at a time costs a fault each,
// seconds per GiB on a virtual machine. Past a memory limit the kernel's
// OOM killer ends the process, as with any other allocation.
func allocResident(n int64, errOut io.Writer) int {
	const chunk = 64 << 20
	var keep [][]byte
	for done := int64(0); done < n; done += chunk {
		b, err := syscall.Mmap(-1, 0, int(min(chunk, n-done)), syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_POPULATE)
		if err != nil {
			fmt.Fprintf(errOut, "alloc: %v after %d bytes\n", err, done)
			return 1
		}
		keep = append(keep, b)
	}
	_ = len(keep)
	return 0
}
