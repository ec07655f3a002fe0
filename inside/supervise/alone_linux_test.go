package supervise

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// aloneEnv makes the test binary the pid 1 of a pid namespace of its own
// (TestAloneOnlyWhenNothingElseRuns): it prints what Run said of Alone.
const aloneEnv = "SUPERVISE_TEST_ALONE"

// TestAloneOnlyWhenNothingElseRuns: Result.Alone (the holder skips its
// sweep after a resident command on it) is true after a command that
// left nothing, also one whose daemon the end killed, and false while a
// process outside the tree runs, or where the scan sees a whole host's
// process table.
func TestAloneOnlyWhenNothingElseRuns(t *testing.T) {
	if os.Getenv(aloneEnv) != "" {
		aloneChild()
		return
	}
	if res, _, _, _ := runSpec(t, Spec{Argv: []string{"true"}}); res.Alone {
		t.Errorf("alone among the host's processes: %+v", res)
	}
	testenv.RequireRoot(t, "a pid namespace with its own /proc")
	cmd := exec.Command(os.Args[0], "-test.run=^TestAloneOnlyWhenNothingElseRuns$")
	cmd.Env = append(os.Environ(), aloneEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the namespace's pid 1: %v: %s", err, out)
	}
	if got, want := strings.TrimSpace(lastLine(string(out))), "true:true daemon:true beside:false"; got != want {
		t.Errorf("alone: got %q, want %q (output %s)", got, want, out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "true:") {
			return l
		}
	}
	return lines[len(lines)-1]
}

// aloneChild is pid 1 of the new namespace: its own /proc, then three
// commands.
func aloneChild() {
	fail := func(what string, err error) { os.Stdout.WriteString(what + ": " + err.Error() + "\n"); os.Exit(1) }
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fail("private mounts", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", 0, ""); err != nil {
		fail("mount /proc", err)
	}
	besidePID := 0
	run := func(argv ...string) bool {
		return Run(context.Background(), Spec{Argv: argv, Stdout: os.Stderr, Stderr: os.Stderr, Others: func(pid int) bool { return pid == besidePID }}).Alone
	}
	a := run("true")
	b := run("sh", "-c", "setsid sleep 300 & echo started")
	beside := exec.Command("sleep", "300")
	if err := beside.Start(); err != nil {
		fail("start beside", err)
	}
	besidePID = beside.Process.Pid
	c := run("true")
	_ = beside.Process.Kill()
	_ = beside.Wait()
	os.Stdout.WriteString("true:" + fmtBool(a) + " daemon:" + fmtBool(b) + " beside:" + fmtBool(c) + "\n")
	os.Exit(0)
}

func fmtBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
