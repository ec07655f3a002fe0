//go:build linux

package integration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// signalHolder is a command that tries to end its own sandbox: it sends
// pid 1 (the holder) every signal a Go pid 1 that catches it would end or
// crash on, by os.kill (which the gate allows), and then carries on. Before, the first SIGTERM ended the sandbox: the run exited
// 125 "stopped from outside" (docker) or "control channel is closed" (oci,
// local), its output and copy back lost.
const signalHolder = `echo kept > repros/signal.txt; echo before
python3 -c '
import os, signal
for s in "TERM INT HUP QUIT ABRT USR1 USR2 PIPE ALRM XCPU XFSZ VTALRM IO PWR SEGV BUS FPE ILL TRAP SYS STKFLT".split():
    try:
        os.kill(1, getattr(signal, "SIG" + s))
    except OSError:
        pass  # refused (EPERM) is as good as dropped
# As the kernel would send a fault (si_code SI_QUEUE, not SI_USER): the Go
# runtime takes a fault it did not raise for one it did, and crashes.
import ctypes
libc = ctypes.CDLL(None)
for s in "SEGV BUS FPE ILL TRAP SYS STKFLT".split():
    libc.sigqueue(1, getattr(signal, "SIG" + s), 0)
# The kernel SIGIO, made a SIGSEGV (F_SETSIG) and addressed to pid 1
# (F_SETOWN): a positive si_code, which passes for a fault too.
import fcntl
r, w = os.pipe()
fcntl.fcntl(r, fcntl.F_SETOWN, 1)
try:
    fcntl.fcntl(r, 10, signal.SIGSEGV)  # F_SETSIG
except OSError:
    pass
fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)
os.write(w, b"x")
'
sleep 1; echo after`

// TestCommandCannotEndItsSandbox: signals a command sends its holder are
// refused; the run ends as the command ends, with its output and its
// writes kept, and a session outlives the attempt.
func TestCommandCannotEndItsSandbox(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "reproducer", currentHost(t))
		out := k.run(t, p, 0, "sh", "-c", signalHolder)
		if out.res.ExitCode != 0 || out.stdout != "before\nafter\n" {
			t.Fatalf("a command's signals to its holder ended the run: exit %d, stdout %q, stderr %q", out.res.ExitCode, out.stdout, out.stderr)
		}
		if b, err := os.ReadFile(filepath.Join(f.root, "repros", "signal.txt")); err != nil || string(b) != "kept\n" {
			t.Fatalf("the command's write was not copied back: %q %v", b, err)
		}

		p = k.build(t, f, "agent", currentHost(t))
		p.Warm = policy.Warm{Session: "sig", Idle: time.Minute}
		wb := k.warm(t)
		res, first := warmRun(t, wb, p, 0, "sh", "-c", "echo up")
		if res.ExitCode != 0 || !strings.Contains(first, "up") {
			t.Fatalf("the session did not start: %+v %q", res.Result, first)
		}
		sandboxID := res.Sandbox
		res, got := warmRun(t, wb, p, 0, "sh", "-c", strings.ReplaceAll(signalHolder, "repros/signal.txt", "$HOME/signal.txt"))
		if res.ExitCode != 0 || got != "before\nafter\n" {
			t.Fatalf("in a session: exit %d, output %q", res.ExitCode, got)
		}
		res, got = warmRun(t, wb, p, 0, "sh", "-c", "cat $HOME/signal.txt")
		if res.Sandbox != sandboxID || got != "kept\n" {
			t.Fatalf("the session ended: the next command ran in sandbox %s, not %s (%q)", res.Sandbox, sandboxID, got)
		}
	})
}

// TestOutsideStopIsReportedAsOutside: a real stop from outside, SIGKILL to
// the holder from the host (as `docker kill`, `runc kill` or an operator's
// kill -9 sends it), is still reported as a stop from outside: the
// holder's refusal of signals does not hide it.
func TestOutsideStopIsReportedAsOutside(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		outsideStop(t, k, func(holder int) error { return syscall.Kill(holder, syscall.SIGKILL) })
		if k.name == docker.Name {
			// `docker stop`: SIGTERM, which the holder drops, then the
			// daemon's SIGKILL after the container's 2 s.
			t.Run("docker stop", func(t *testing.T) {
				outsideStop(t, k, func(holder int) error {
					cli := k.b.(*docker.Backend).Client()
					id, err := containerOf(cli, holder)
					if err != nil {
						return err
					}
					_, err = cli.ContainerStop(context.Background(), id, client.ContainerStopOptions{})
					return err
				})
			})
		}
	})
}

// containerOf is the id of the docker container whose init is host pid
// holder: only the test's own, whatever else runs beside it.
func containerOf(cli *client.Client, holder int) (string, error) {
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
		Filters: make(client.Filters).Add("label", profiles.LabelOwner+"=triage-sandbox")})
	if err != nil {
		return "", err
	}
	for _, c := range list.Items {
		in, err := cli.ContainerInspect(context.Background(), c.ID, client.ContainerInspectOptions{})
		if err == nil && in.Container.State != nil && in.Container.State.Pid == holder {
			return c.ID, nil
		}
	}
	return "", fmt.Errorf("no container of ours has init pid %d", holder)
}

// outsideStop runs a command and stops its sandbox from outside with stop
// (given the holder's host pid) once it runs: the run must end with one
// line saying so.
func outsideStop(t *testing.T, k *kit, stop func(holder int) error) {
	{
		f := newFixture(t)
		p := k.build(t, f, "reproducer", currentHost(t))
		token := "outside-stop-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		type out struct {
			err error
		}
		done := make(chan out, 1)
		go func() {
			_, err := sandbox.Run(context.Background(), k.b, sandbox.Request{Policy: p, Timeout: time.Minute,
				Command: backends.Command{Argv: []string{"sh", "-c", "sleep 40; : " + token}}, NoAudit: true})
			done <- out{err}
		}()
		var holder int
		if !testenv.Eventually(30*time.Second, func() bool {
			for _, pid := range processesNaming(token) {
				if holder = namespaceInit(pid); holder > 0 {
					return true
				}
			}
			return false
		}) {
			t.Fatal("the command never started, or its sandbox has no pid namespace of its own")
		}
		if err := stop(holder); err != nil {
			t.Fatalf("stopping the sandbox of holder pid %d from outside: %v", holder, err)
		}
		var o out
		select {
		case o = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the run did not end after its holder was killed")
		}
		if o.err == nil || !strings.Contains(o.err.Error(), "stopped from outside") || strings.Contains(o.err.Error(), "\n") {
			t.Fatalf("a SIGKILL from the host was not reported as a stop from outside: %v", o.err)
		}
		t.Logf("%v", o.err)
	}
}

// namespaceInit is the host pid of the init of pid's pid namespace (its
// nearest ancestor, or itself, whose innermost pid is 1), or 0 when pid
// runs in the host's namespace.
func namespaceInit(pid int) int {
	for pid > 1 {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			return 0
		}
		var ppid int
		for _, line := range strings.Split(string(raw), "\n") {
			k, v, _ := strings.Cut(line, ":")
			f := strings.Fields(v)
			switch {
			case k == "NSpid" && len(f) > 1 && f[len(f)-1] == "1":
				return pid
			case k == "PPid" && len(f) == 1:
				ppid, _ = strconv.Atoi(f[0])
			}
		}
		pid = ppid
	}
	return 0
}
