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

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestSupervisorOutlivesAFullProcessTable: the in-sandbox supervisor
// (`triage-sandbox __exec`) runs a fork bomb in a pids cgroup of 64. A Go
// supervisor that needs one more OS thread once the table is full dies
// ("fatal error: newosproc", exit 2) and leaves the bomb without its
// timeout. Whether it needs that thread depends on timing: before its
// threads were reserved, 4 of 6 runs died, so the test makes several.
func TestSupervisorOutlivesAFullProcessTable(t *testing.T) {
	testenv.SkipShort(t, "runs a fork bomb for seconds")
	testenv.RequireRoot(t, "to make a pids cgroup")
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
		// The supervisor is gone: so must be every process of its tree, or
		// the next try starts in a full table.
		if live := liveTasks(cg); len(live) > 0 {
			t.Fatalf("try %d: the supervisor ended with %d processes of its tree alive: %v", try, len(live), live)
		}
	}
}

func superviseBomb(t *testing.T, cg string, try int) {
	t.Helper()
	// The shell moves itself into the cgroup, then becomes the supervisor.
	// The command's shell forks once, before the bomb exists, and then
	// execs: a second fork of its own could fail in the full table and end
	// it (dash's "Cannot fork", exit 2) before its timeout.
	argv := protocol.MustArgv(testenv.Binary(t), protocol.EntryExec, protocol.Exec{
		Argv:    []string{"sh", "-c", "b() { b | b & }; b & exec sleep 30"},
		Timeout: protocol.Duration(2 * time.Second), Grace: protocol.Duration(200 * time.Millisecond)})
	cmd := exec.Command("sh", append([]string{"-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "sh", cg}, argv...)...)
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
	if code != exitcode.Timeout || len(said) > 0 {
		t.Fatalf("try %d: the supervisor ended with %d, want %d from its timeout; it said %q", try, code, exitcode.Timeout, said)
	}
}

// liveTasks lists the processes in cg that are not zombies (a zombie is
// on its way out, reaped by its new parent).
func liveTasks(cg string) []string {
	b, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	var live []string
	for _, p := range strings.Fields(string(b)) {
		stat, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] != 'Z' {
			live = append(live, p)
		}
	}
	return live
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
