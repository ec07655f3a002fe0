//go:build linux

package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// warmKit wraps a backend the way the CLI does for sessions and pools,
// with keepers of the test's own in a directory of the test's own.
func (k *kit) warm(t testing.TB) *warm.Backend {
	t.Helper()
	dir, err := os.MkdirTemp("", "tsw") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		recs, _ := warm.List(dir)
		for _, r := range recs {
			if r.Alive() {
				_ = syscall.Kill(r.PID, syscall.SIGTERM)
			}
		}
		waitKeepersGone(t, dir)
		_ = os.RemoveAll(dir)
	})
	return &warm.Backend{Backend: k.b, SelfExe: testenv.Binary(t), Dir: dir}
}

// waitKeepersGone waits until no keeper recorded in dir runs.
func waitKeepersGone(t testing.TB, dir string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		recs, _ := warm.List(dir)
		alive := 0
		for _, r := range recs {
			if r.Alive() {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d keeper(s) still run in %s", alive, dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// warmRun is one command through the warm backend, as `run` takes it.
func warmRun(t *testing.T, b backends.Backend, p *policy.Policy, timeout time.Duration, argv ...string) (sandbox.Outcome, string) {
	t.Helper()
	var out testenv.Buffer
	res, err := sandbox.Run(context.Background(), b, sandbox.Request{
		Policy: p, Timeout: timeout, Command: backends.Command{Argv: argv},
		Streams: backends.Streams{Stdout: &out, Stderr: &out}, NoAudit: true,
	})
	if err != nil {
		t.Fatalf("run %v: %v", argv, err)
	}
	return res, out.String()
}

func TestSessionKeepsScratchAndOutlivesATimeout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "agent", currentHost(t))
		p.Warm = policy.Warm{Session: "t1", Idle: time.Minute}
		wb := k.warm(t)
		res, out := warmRun(t, wb, p, 0, "sh", "-c", "echo kept > $HOME/f; echo one")
		if res.ExitCode != 0 || !strings.Contains(out, "one") {
			t.Fatalf("first command: %+v %q", res.Result, out)
		}
		first := res.Sandbox
		res, out = warmRun(t, wb, p, 0, "sh", "-c", "cat $HOME/f")
		if res.ExitCode != 0 || strings.TrimSpace(out) != "kept" || res.Sandbox != first {
			t.Fatalf("second command in the session: %+v %q (sandbox %s, first %s)", res.Result, out, res.Sandbox, first)
		}
		res, _ = warmRun(t, wb, p, time.Second, "sh", "-c", "sleep 300 & sleep 300")
		if !res.TimedOut {
			t.Fatalf("the command did not time out: %+v", res.Result)
		}
		res, out = warmRun(t, wb, p, 0, "sh", "-c", "cat $HOME/f; ps -eo comm")
		if res.ExitCode != 0 || !strings.Contains(out, "kept") || strings.Contains(out, "sleep") {
			t.Fatalf("after the timeout the session must be usable with the timed-out tree gone: %+v %q", res.Result, out)
		}
		ended, err := warm.End(wb.Dir, p)
		if err != nil || !ended {
			t.Fatalf("ending the session: %v %v", ended, err)
		}
		waitKeepersGone(t, wb.Dir)
		k.waitNoLeftovers(t, first)
		// Another session never sees the first one's files.
		p.Warm.Session = "t2"
		_, out = warmRun(t, wb, p, 0, "sh", "-c", "cat $HOME/f 2>&1 || echo absent")
		if !strings.Contains(out, "absent") {
			t.Fatalf("a new session saw the old one's scratch: %q", out)
		}
	})
}

// A command's working directory is its own: a session's next command
// started elsewhere (run --workdir) runs in the same sandbox, HOME kept.
func TestSessionSurvivesAnotherWorkdir(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "agent", currentHost(t))
		p.Warm = policy.Warm{Session: "wd", Idle: time.Minute}
		wb := k.warm(t)
		res, out := warmRun(t, wb, p, 0, "sh", "-c", "echo kept > $HOME/f; pwd")
		if res.ExitCode != 0 || strings.TrimSpace(out) != p.Workdir {
			t.Fatalf("first command: %+v %q, want it in %s", res.Result, out, p.Workdir)
		}
		first := res.Sandbox
		moved := *p
		moved.Workdir = f.checkout
		res, out = warmRun(t, wb, &moved, 0, "sh", "-c", "pwd; cat $HOME/f")
		if res.ExitCode != 0 || res.Sandbox != first || out != f.checkout+"\nkept\n" {
			t.Fatalf("a command in another workdir: %+v %q (sandbox %s, first %s; notes %q)", res.Result, out, res.Sandbox, first, res.Warnings)
		}
		if _, err := warm.End(wb.Dir, p); err != nil {
			t.Fatal(err)
		}
		waitKeepersGone(t, wb.Dir)
		k.waitNoLeftovers(t, first)
	})
}

func TestPoolGivesEachRunAFreshSandbox(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "reproducer", currentHost(t))
		p.Warm = policy.Warm{Pool: 2, Idle: time.Minute}
		wb := k.warm(t)
		// Concurrent callers never share a sandbox, and nothing a run
		// leaves in scratch reaches another.
		const callers = 4
		ids := make(chan string, callers)
		outs := make(chan string, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, out := warmRun(t, wb, p, 0, "sh", "-c", fmt.Sprintf("ls -A $HOME; touch $HOME/mark-%d", i))
				ids <- res.Sandbox
				outs <- out
			}()
		}
		wg.Wait()
		close(ids)
		close(outs)
		seen := map[string]bool{}
		for id := range ids {
			if seen[id] {
				t.Fatalf("two runs shared sandbox %s", id)
			}
			seen[id] = true
		}
		for out := range outs {
			if strings.Contains(out, "mark-") {
				t.Fatalf("a pooled run saw another run's scratch: %q", out)
			}
		}
		// Used sandboxes are removed, off the callers' path but for sure.
		for id := range seen {
			k.waitNoLeftovers(t, id)
		}
	})
}

func TestIdleExpiryLeavesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "agent", currentHost(t))
		p.Warm = policy.Warm{Session: "idle", Idle: 2 * time.Second}
		wb := k.warm(t)
		res, _ := warmRun(t, wb, p, 0, "true")
		waitKeepersGone(t, wb.Dir)
		k.waitNoLeftovers(t, res.Sandbox)
		if recs, _ := warm.List(wb.Dir); len(recs) != 0 {
			t.Fatalf("records left after the idle expiry: %+v", recs)
		}
		// The keeper host ends (its socket and record with it) once it
		// has held no keeper for its grace.
		var left []string
		if !testenv.Eventually(15*time.Second, func() bool {
			left, _ = filepath.Glob(filepath.Join(wb.Dir, "*.sock"))
			more, _ := filepath.Glob(filepath.Join(wb.Dir, "host-*.rec"))
			left = append(left, more...)
			return len(left) == 0
		}) {
			t.Fatalf("sockets or records left after the idle expiry: %v", left)
		}
	})
}

// A run killed with SIGKILL during a session command takes the command's
// whole tree with it; the session stays usable.
func TestKilledRunEndsItsCommandOnly(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "agent", currentHost(t))
		p.Warm = policy.Warm{Session: "kill9", Idle: time.Minute}
		wb := k.warm(t)
		warmRun(t, wb, p, 0, "true") // the session is up
		cli := exec.Command(testenv.Binary(t), "run", "--backend", k.name, "--session", "kill9", "--",
			"sh", "-c", "echo started; sleep 300 & sleep 301")
		cli.Dir = f.root
		cli.Env = append(os.Environ(), warm.DirEnv+"="+wb.Dir, "HOME="+p.WorkspaceRoot)
		stdout, err := cli.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cli.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if n, _ := stdout.Read(buf); !strings.Contains(string(buf[:n]), "started") {
			_ = cli.Process.Kill()
			_ = cli.Wait()
			t.Fatalf("the session command did not start: %q", buf[:n])
		}
		_ = cli.Process.Kill()
		_ = cli.Wait()
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, out := warmRun(t, wb, p, 0, "ps", "-eo", "pid,ppid,stat,comm,args")
			if res.ExitCode == 0 && !strings.Contains(out, "sleep") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the killed run's command tree is still in the session: %q", out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// leftovers names what is left of sandbox id, as its backend keeps it, or
// "" when nothing is.
func (k *kit) leftovers(id string) string {
	switch k.name {
	case "docker":
		if _, err := k.b.(interface{ Client() *client.Client }).Client().ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); err == nil {
			return "container " + id
		}
	default:
		root := stateRoot(k.name)
		for _, dir := range []string{filepath.Join(root, "bundles", id), filepath.Join(root, "runtime", id), filepath.Join(root, id)} {
			if _, err := os.Lstat(dir); err == nil {
				return dir
			}
		}
	}
	if pids := processesNaming(id); len(pids) > 0 {
		return fmt.Sprintf("processes %v", pids)
	}
	return ""
}

// waitNoLeftovers waits (generously: the machine is busy) until nothing of
// sandbox id is left.
func (k *kit) waitNoLeftovers(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for left := k.leftovers(id); left != ""; left = k.leftovers(id) {
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s is not gone: %s", id, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSessionCommandLeavesNothing: what a command leaves running must not
// outlive it in the session: a daemon (setsid, its parent gone), and the
// tree of a command that killed its own supervisor (it runs as the same
// identity). Before the holder swept leftovers the second one wrote its
// file seconds later; under gVisor (no subreapers) the daemon escaped its
// supervisor's tree and Chromium's crash handler, an orphan too, was taken
// for a leftover while Chromium ran.
func TestSessionCommandLeavesNothing(t *testing.T) {
	for _, name := range append(backendNames, gvisor) {
		t.Run(name, func(t *testing.T) { sessionLeavesNothing(t, newKit(t, name)) })
	}
}

// liveProcesses lists the sandbox's processes that are not zombies: a
// killed process whose new parent (pid 1 under gVisor) has yet to reap it is
// gone for every purpose but its pid.
const liveProcesses = "ps -eo stat=,comm= | grep -v '^Z'"

func sessionLeavesNothing(t *testing.T, k *kit) {
	f := newFixture(t)
	p := k.build(t, f, "agent", currentHost(t))
	p.Warm = policy.Warm{Session: "orphan", Idle: time.Minute}
	wb := k.warm(t)
	t.Cleanup(func() {
		_, _ = warm.End(wb.Dir, p)
		waitKeepersGone(t, wb.Dir)
	})
	// An orphan lives as long as its command runs (Chromium's crash handler).
	// It marks its start and, a second later, that it still lives; the
	// command waits up to 10 s for that (gVisor under load is slow to start).
	res, out := warmRun(t, wb, p, 30*time.Second, "sh", "-c",
		"(setsid sh -c 'echo started > $HOME/orphan; sleep 1; echo alive >> $HOME/orphan' &); "+
			"for i in $(seq 100); do grep -q alive $HOME/orphan 2>/dev/null && break; sleep 0.1; done; cat $HOME/orphan; rm -f $HOME/orphan")
	if res.ExitCode != 0 || !strings.Contains(out, "alive") {
		_, ps := warmRun(t, wb, p, 0, "ps", "-eo", "pid,ppid,stat,etime,comm")
		t.Fatalf("an orphan was killed while its command ran: %+v %q; the sandbox's processes now:\n%s", res.Result, out, ps)
	}
	for _, tc := range []struct{ name, script string }{
		{"daemon", "(setsid sh -c 'sleep 2; echo left > $HOME/leftover' &); sleep 0.3; echo started"},
		{"killed supervisor", "(sleep 2; echo left > $HOME/leftover) & sleep 0.3; kill -KILL $PPID; sleep 1"},
	} {
		res, out := warmRun(t, wb, p, 30*time.Second, "sh", "-c", tc.script)
		if res.TimedOut {
			t.Fatalf("%s: the command should end by itself: %+v %q", tc.name, res.Result, out)
		}
		if tc.name == "daemon" {
			// Gone before the end is told, not some time after.
			if res, out = warmRun(t, wb, p, 0, "sh", "-c", liveProcesses); strings.Contains(out, "sleep") {
				t.Fatalf("daemon: still running when the next command started: %+v %q", res.Result, out)
			}
		}
		time.Sleep(3 * time.Second)
		res, out = warmRun(t, wb, p, 0, "sh", "-c", "cat $HOME/leftover 2>/dev/null || echo absent; rm -f $HOME/leftover; "+liveProcesses)
		if res.ExitCode != 0 || !strings.Contains(out, "absent") || strings.Contains(out, "sleep") {
			t.Fatalf("%s: what the command left lived on in the session: %+v %q", tc.name, res.Result, out)
		}
	}
}

// A session command's early connection (run dials its keeper while it
// builds the policy) runs the command in the session's sandbox; after the
// config changed, the early connection reaches the old sandbox and is not
// used: the old sandbox is ended and the command runs in a new one.
func TestSessionEarlyConnectionRefusesAChangedPolicy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "agent", currentHost(t))
		p.Warm = policy.Warm{Session: "early", Idle: time.Minute}
		wb := k.warm(t)
		res, _ := warmRun(t, wb, p, 0, "true")
		first := res.Sandbox
		wb.Early = warm.DialEarly(wb.Dir, p.WorkspaceRoot, p.Role, p.Warm.Session)
		res, _ = warmRun(t, wb, p, 0, "true")
		if res.ExitCode != 0 || res.Sandbox != first {
			t.Fatalf("a command through the early connection: %+v (sandbox %s, first %s)", res.Result, res.Sandbox, first)
		}
		changed := *p
		changed.Limits.Memory += 1 << 20
		wb.Early = warm.DialEarly(wb.Dir, p.WorkspaceRoot, p.Role, p.Warm.Session)
		res, _ = warmRun(t, wb, &changed, 0, "true")
		if res.ExitCode != 0 || res.Sandbox == first {
			t.Fatalf("a command of a changed policy ran in the old sandbox %s: %+v", first, res.Result)
		}
		if !strings.Contains(strings.Join(res.Warnings, "\n"), "the policy changed") {
			t.Errorf("no word of the policy change: %q", res.Warnings)
		}
		k.waitNoLeftovers(t, first)
		if _, err := warm.End(wb.Dir, &changed); err != nil {
			t.Fatal(err)
		}
		waitKeepersGone(t, wb.Dir)
		k.waitNoLeftovers(t, res.Sandbox)
	})
}
