package sandboxinit_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/supervise"
)

// TestSupervisorOutlivesAFullProcessTable: the in-sandbox supervisor
// (`triage-sandbox __exec`) runs a fork bomb in a pids cgroup of 64. A Go
// supervisor that needs one more OS thread once the table is full dies
// ("fatal error: newosproc", exit 2) and leaves the bomb without its
// timeout. Whether it needs that thread depends on timing: before its
// threads were reserved, 4 of 6 runs died, so the test makes several.
func TestSupervisorOutlivesAFullProcessTable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a pids cgroup")
	}
	dir, err := cgroupfs.ControllerDir(os.Getpid(), "pids")
	if err != nil {
		t.Skipf("no pids cgroup here: %v", err)
	}
	cg := filepath.Join(dir.Path, fmt.Sprintf("sandboxinit-test-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Skipf("cannot make a pids cgroup: %v", err)
	}
	t.Cleanup(func() { removeCgroup(t, cg) })
	if err := os.WriteFile(filepath.Join(cg, "pids.max"), []byte("64"), 0o644); err != nil {
		t.Fatal(err)
	}
	for try := range 4 {
		superviseBomb(t, cg, try)
	}
}

func superviseBomb(t *testing.T, cg string, try int) {
	t.Helper()
	// The shell moves itself into the cgroup, then becomes the supervisor.
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" __exec --timeout 2s --grace 200ms -- sh -c 'b() { b | b & }; b; exec sleep 30'`,
		"sh", cg, testenv.Binary(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The supervisor's stdout waits on a stalled reader (a busy daemon) past
	// the timeout, then drains.
	time.Sleep(4 * time.Second)
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	var said []string
	for l := range strings.SplitSeq(stderr.String(), "\n") {
		if len(said) < 3 && (strings.Contains(l, "runtime") || strings.Contains(l, "fatal")) {
			said = append(said, l)
		}
	}
	if code != supervise.ExitTimeout || len(said) > 0 {
		t.Fatalf("try %d: the supervisor ended with %d, want %d from its timeout; it said %q", try, code, supervise.ExitTimeout, said)
	}
}

// removeCgroup kills what is left in cg and removes it.
func removeCgroup(t *testing.T, cg string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
		pids := strings.Fields(string(b))
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := os.Remove(cg)
		if err == nil || os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("cgroup %s left behind: %v (holds %v)", cg, err, pids)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
