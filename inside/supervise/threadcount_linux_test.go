package supervise

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// TestThreadCountIsStatus: threadCount is the Threads line of
// /proc/self/status (read right after; the test's threads are idle).
func TestThreadCountIsStatus(t *testing.T) {
	for range 3 {
		got := threadCount()
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := bytes.Cut(b, []byte("\nThreads:"))
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		want, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
		if err != nil || want <= 0 {
			t.Fatalf("no Threads line: %q", b)
		}
		if got == want {
			return
		}
		t.Logf("threadCount %d, status %d: again (a thread may have started between)", got, want)
	}
	t.Fatal("threadCount never matched /proc/self/status")
}
