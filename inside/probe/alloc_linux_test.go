package probe

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssBytes is this process's resident memory.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// Both ways of allocating make the memory resident (what a memory limit
// is charged for), not merely mapped: huge pages with
// MADV_POPULATE_WRITE, and MAP_POPULATE where the kernel lacks it.
func TestAllocResidentIsResident(t *testing.T) {
	const size = 96 << 20
	for _, huge := range []bool{true, false} {
		t.Run("huge="+strconv.FormatBool(huge), func(t *testing.T) {
			before := rssBytes(t)
			var errOut bytes.Buffer
			if rc := allocResidentPages(size, &errOut, huge); rc != 0 {
				t.Fatalf("exit %d: %s", rc, errOut.String())
			}
			// The runtime never unmaps what unix.Mmap mapped: the memory
			// stays resident after the helper returns.
			if grew := rssBytes(t) - before; grew < size*9/10 {
				t.Fatalf("resident memory grew %d bytes, want about %d", grew, size)
			}
		})
	}
}
