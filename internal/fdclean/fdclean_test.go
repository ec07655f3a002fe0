package fdclean

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInheritedDescriptorsDoNotReachChildren: a descriptor opened without
// close-on-exec reaches a child until CloseOnExecAbove runs, and not after.
func TestInheritedDescriptorsDoNotReachChildren(t *testing.T) {
	for _, name := range []string{"range", "one by one"} {
		t.Run(name, func(t *testing.T) {
			fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0) // no O_CLOEXEC
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)
			if !inherited(t, fd) {
				t.Fatalf("control: descriptor %d without close-on-exec did not reach the child", fd)
			}
			if name == "range" {
				err = CloseOnExecAbove(2)
			} else {
				err = eachOpen("/proc/self/fd", 2)
			}
			if err != nil {
				t.Fatal(err)
			}
			if inherited(t, fd) {
				t.Fatalf("descriptor %d still reaches the child", fd)
			}
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
				t.Fatalf("descriptor %d no longer usable here: %v", fd, err)
			}
		})
	}
}

func inherited(t *testing.T, fd int) bool {
	t.Helper()
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc")
	}
	out, err := exec.Command("sh", "-c", "ls /proc/$$/fd").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(out)) {
		if f == strconv.Itoa(fd) {
			return true
		}
	}
	return false
}
