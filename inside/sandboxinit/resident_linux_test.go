package sandboxinit_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
)

// TestResidentSupervisor: a holder runs its commands under the supervisor
// resident in it. The first command times out and its whole tree (a
// setsid'd daemon too) is killed; the next commands run at once and
// normally; a command cannot read the holder's descriptors; a command
// started while another runs gets a supervisor process, which the
// resident tree leaves alone.
func TestResidentSupervisor(t *testing.T) {
	testenv.SkipShort(t, "builds the binary and runs its holder")
	h := startHolder(t)
	// 1. Times out, with a daemon of its own left behind.
	begun := time.Now()
	code, out := h.exec(t, protocol.Exec{Argv: []string{"sh", "-c", "setsid sleep 300 & echo $! >" + h.dir + "/daemon; exec sleep 300"},
		Timeout: protocol.Duration(500 * time.Millisecond), Grace: protocol.Duration(200 * time.Millisecond), Lifeline: true})
	if code != exitcode.Timeout {
		t.Fatalf("first command: exit %d, want %d (timeout): %q", code, exitcode.Timeout, out)
	}
	if d := time.Since(begun); d > 5*time.Second {
		t.Fatalf("first command took %v to time out", d)
	}
	b, err := os.ReadFile(h.dir + "/daemon")
	if err != nil {
		t.Fatal(err)
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid <= 0 || syscall.Kill(pid, 0) == nil {
		t.Fatalf("the timed-out command's daemon %q is alive", b)
	}
	// 2. The next runs normally, its output and code its own.
	for i := range 3 {
		code, out = h.exec(t, protocol.Exec{Argv: []string{"sh", "-c", "echo ok; exit 3"}, Lifeline: true})
		if code != 3 || out != "ok\n" {
			t.Fatalf("command %d after the timeout: exit %d, output %q; want 3, %q", i+2, code, out, "ok\n")
		}
	}
	// 3. Its parent is the holder, whose descriptors it cannot read.
	code, out = h.exec(t, protocol.Exec{Argv: []string{"sh", "-c",
		`ls /proc/$$/fd >/dev/null && echo control-ok; [ "$PPID" = ` + strconv.Itoa(h.cmd.Process.Pid) + ` ] && echo child-of-holder; ls /proc/$PPID/fd && echo reached-holder; true`}, Lifeline: true})
	if !strings.Contains(out, "control-ok") || !strings.Contains(out, "child-of-holder") || strings.Contains(out, "reached-holder") {
		t.Fatalf("exit %d: %q: want control-ok and child-of-holder, not reached-holder", code, out)
	}
	// 4. Two at once: the second gets a supervisor process; the first's
	// end (and its tree's kill) leaves the second running.
	slow := make(chan string, 1)
	go func() {
		_, out := h.exec(t, protocol.Exec{Argv: []string{"sh", "-c", "sleep 1; echo slow-done"}, Lifeline: true})
		slow <- out
	}()
	time.Sleep(200 * time.Millisecond)
	code, out = h.exec(t, protocol.Exec{Argv: []string{"sh", "-c", "echo fast"}, Lifeline: true})
	if code != 0 || out != "fast\n" {
		t.Fatalf("concurrent command: exit %d, %q", code, out)
	}
	if out := <-slow; out != "slow-done\n" {
		t.Fatalf("the resident command beside a supervisor process: %q", out)
	}
}

type testHolder struct {
	cmd *exec.Cmd
	ctl *control.Client
	bin string
	dir string
}

// startHolder starts `__hold` with a control channel, as another identity
// when this is root (root could read any process's descriptors). It is
// ended only by SIGKILL: its own end kills every process of its identity.
func startHolder(t *testing.T) *testHolder {
	t.Helper()
	bin := readableBinary(t)
	dir, err := os.MkdirTemp("", "resident-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	host, holder, err := control.Pair()
	if err != nil {
		t.Fatal(err)
	}
	argv := protocol.MustArgv(bin, protocol.EntryHold, protocol.Hold{ControlFD: 3})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{holder}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Getuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("holder's stderr: %s", stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, string(protocol.StateReady)) {
		t.Fatalf("holder: %q %v; stderr %s", line, err, stderr.String())
	}
	ctl, err := control.NewClient(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctl.Close() })
	return &testHolder{cmd: cmd, ctl: ctl, bin: bin, dir: dir}
}

// exec runs spec through the holder and returns its exit and output
// (stdout and stderr, after the start marker).
func (h *testHolder) exec(t *testing.T, spec protocol.Exec) (int, string) {
	t.Helper()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.ctl.Start(context.Background(), protocol.MustArgv(h.bin, protocol.EntryExec, spec), "", nil,
		[]*os.File{stdinR, outW, outW})
	_ = stdinR.Close()
	_ = outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinW.Close()
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(outR); got <- b }()
	e, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	select {
	case b = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the output stayed open after the command's end")
	}
	return e.Code, strings.TrimPrefix(string(b), string([]byte{protocol.ExecStarted}))
}
