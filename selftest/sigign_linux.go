package selftest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// awaitIgnoring waits until pid ignores sig (its /proc status says so),
// for at most d, and reports whether it does: a control that signals a
// probe before the probe could ignore the signal proves nothing (a start
// of the binary takes far longer than usual on a loaded machine).
func awaitIgnoring(pid int, sig syscall.Signal, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if ignores(pid, sig) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ignores reads SigIgn from /proc/PID/status.
func ignores(pid int, sig syscall.Signal) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}
