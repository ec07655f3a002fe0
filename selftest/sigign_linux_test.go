package selftest

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestAwaitIgnoring: the PROC-03 control signals its probe once the probe
// ignores SIGTERM, and only a process that ignores it is waited for.
func TestAwaitIgnoring(t *testing.T) {
	for _, tt := range []struct {
		script string
		want   bool
	}{{"trap '' TERM; sleep 5", true}, {"sleep 5", false}} {
		cmd := exec.Command("sh", "-c", tt.script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		got := awaitIgnoring(cmd.Process.Pid, syscall.SIGTERM, 500*time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if got != tt.want {
			t.Errorf("%q: ignoring %v, want %v", tt.script, got, tt.want)
		}
	}
}
