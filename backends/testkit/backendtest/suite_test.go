package backendtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// recorder is a testing.TB that notes failures instead of failing the
// test: the Suite's checks are run against broken backends with it.
type recorder struct {
	testing.TB
	mu    sync.Mutex
	fails []string
	skip  string
}

func (r *recorder) Helper() {}
func (r *recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fails = append(r.fails, s)
}
func (r *recorder) Errorf(format string, args ...any) { r.note(fmt.Sprintf(format, args...)) }
func (r *recorder) Error(args ...any)                 { r.note(fmt.Sprint(args...)) }
func (r *recorder) Fail()                             { r.note("Fail") }
func (r *recorder) Fatalf(format string, args ...any) {
	r.note(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) { r.note(fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) FailNow()          { r.note("FailNow"); runtime.Goexit() }
func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) { r.skip = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) SkipNow()         { r.skip = "SkipNow"; runtime.Goexit() }
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.fails) > 0
}

// record runs check with a recorder, on a goroutine of its own (a Fatal
// ends it), and returns what it recorded. A skip is never a pass.
func record(t *testing.T, name string, check func(testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	if r.skip != "" {
		// Called from several goroutines: no Fatal.
		t.Errorf("check %q skipped: %s", name, r.skip)
	}
	return r.fails
}

// recordSuite runs the Suite's checks against f and returns each
// check's failures by name.
func recordSuite(t *testing.T, f Factory) map[string][]string {
	got := map[string][]string{}
	runSuite(t, f, func(name string, check func(testing.TB)) { got[name] = record(t, name, check) })
	return got
}

// hostPolicy is a policy whose workdir is a writable directory of the
// test's, staged (the host runner below copies nothing, but holds its
// commands back until Stage when its start deferred the copy).
func hostPolicy(t testing.TB) *policy.Policy {
	dir := t.TempDir()
	return &policy.Policy{WorkspaceRoot: dir, Workdir: dir, Mounts: []policy.Mount{{Path: dir, Kind: "dir"}},
		Staging: policy.Staging{Size: 1 << 20, Inodes: 1000}}
}

// deferredAndPending: sb's start deferred its staged copy and no Stage
// came yet.
func deferredAndPending(sb *Sandbox, deferred bool) bool {
	events, _, _ := sb.Record()
	return deferred && !slices.Contains(events, "stage")
}

// hostRun is what a correct backend does, with no isolation at all: the
// command runs as a host process in its own process group, killed whole
// at its timeout. It is the control for the broken backends below.
func hostRun(p *policy.Policy, sb *Sandbox, deferred bool) func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	return func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
		if sb.Closes() > 0 {
			return backends.Result{}, errors.New("the sandbox is closed")
		}
		if deferredAndPending(sb, deferred) {
			return backends.Result{}, errors.New("the staged copy is not in place yet")
		}
		res := backends.Result{Sandbox: sb.Name}
		if cmd.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, cmd.Timeout)
			defer cancel()
		}
		c := osexec.Command(cmd.Argv[0], cmd.Argv[1:]...)
		c.Dir = p.Workdir
		if cmd.Workdir != "" {
			c.Dir = cmd.Workdir
		}
		c.Stdin, c.Stdout, c.Stderr = cmd.Stdin, out.Stdout, out.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// A descendant in another session holds the streams: Wait does not
		// wait for it past the command's end.
		c.WaitDelay = time.Second
		if err := c.Start(); err != nil {
			if errors.Is(err, osexec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
				res.ExitCode = 127
			} else {
				res.ExitCode = 126
			}
			return res, nil
		}
		stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) })
		defer stop()
		// Descendants in other process groups (the setsid one) go too.
		defer killMarked(cmd.Argv)
		_ = c.Wait()
		res.TimedOut = ctx.Err() != nil
		ws := c.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case res.TimedOut:
			res.ExitCode = 124
		case ws.Signaled():
			res.Signal, res.ExitCode = int(ws.Signal()), 128+int(ws.Signal())
		default:
			res.ExitCode = ws.ExitStatus()
		}
		return res, nil
	}
}

// killMarked kills the process groups of the host processes whose
// command line holds one of argv's suite markers (the timeout check's
// tree in a session of its own, with its children) and returns once they
// are gone (a zombie's command line is empty), within a bound.
func killMarked(argv []string) {
	for _, a := range argv {
		if !strings.HasPrefix(a, "suite-timeout-") {
			continue
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			pids := marked(a)
			if len(pids) == 0 {
				break
			}
			for _, pid := range pids {
				if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 {
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
				}
			}
		}
	}
}

// marked are the host processes whose command line holds marker.
func marked(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if raw, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); strings.Contains(string(raw), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hostFactory is the control: a fake whose sandboxes run commands on the
// host as a backend would. broken changes one thing of it: it is called
// with the harness once it is made (sb nil), and with each sandbox (h nil).
func hostFactory(broken func(sb *Sandbox, h *Harness)) Factory {
	return func(t testing.TB) Harness {
		b := New()
		var h Harness
		var p *policy.Policy
		h.Policy = func(t testing.TB) *policy.Policy { p = hostPolicy(t); return p }
		b.NewSandbox = func(n int) *Sandbox {
			sb := &Sandbox{Name: fmt.Sprintf("host-%d", n)}
			// Called with b's lock held: its record read directly.
			sb.ExecFunc = hostRun(p, sb, b.startOpts[n-1].DeferStaging)
			if broken != nil {
				broken(sb, nil)
			}
			return sb
		}
		h.Backend = b
		h.Track = func(testing.TB) func(backends.Sandbox) func() []string {
			return func(sb backends.Sandbox) func() []string {
				return func() []string {
					if sb.(*Sandbox).Closes() == 0 {
						return []string{"sandbox " + sb.ID()}
					}
					return nil
				}
			}
		}
		if broken != nil {
			broken(nil, &h)
		}
		return h
	}
}

// TestSuiteControl: a backend that does what the contract says passes
// every check, so a failure below is the breakage's.
func TestSuiteControl(t *testing.T) {
	if _, err := osexec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	for name, fails := range recordSuite(t, hostFactory(nil)) {
		if len(fails) > 0 {
			t.Errorf("%s failed on the host runner: %q", name, fails)
		}
	}
}

// TestSuiteFailsBrokenBackends: each check fails against a backend broken
// in what it checks, and only the checks that depend on it fail.
func TestSuiteFailsBrokenBackends(t *testing.T) {
	if _, err := osexec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	// The test ends once every run and the tree a broken timeout leaves
	// are gone.
	var left sync.WaitGroup
	defer left.Wait()
	for _, tt := range []struct {
		name   string
		broken func(sb *Sandbox, h *Harness)
		fail   []string
	}{
		{"runs nothing", func(sb *Sandbox, _ *Harness) {
			if sb == nil {
				return
			}
			sb.ExecFunc = func(context.Context, backends.Command, backends.Streams) (backends.Result, error) {
				return backends.Result{Sandbox: sb.Name}, nil
			}
		}, []string{"streams", "exit codes", "stdin", "whole output", "workdir", "staged round trip", "timeout", "close", "deferred staging"}},
		{"result names no sandbox", func(sb *Sandbox, _ *Harness) {
			if sb == nil {
				return
			}
			run := sb.ExecFunc
			sb.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
				res, err := run(ctx, cmd, out)
				res.Sandbox = ""
				return res, err
			}
		}, []string{"streams"}},
		{"drops stderr", func(sb *Sandbox, _ *Harness) {
			if sb == nil {
				return
			}
			run := sb.ExecFunc
			sb.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
				out.Stderr = discard{}
				return run(ctx, cmd, out)
			}
		}, []string{"streams", "whole output"}},
		{"caps the output", func(sb *Sandbox, _ *Harness) {
			if sb == nil {
				return
			}
			run := sb.ExecFunc
			sb.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
				out.Stdout = &capped{w: out.Stdout, left: 1 << 20}
				return run(ctx, cmd, out)
			}
		}, []string{"whole output"}},
		{"ignores the timeout", func(sb *Sandbox, _ *Harness) {
			if sb == nil {
				return
			}
			run := sb.ExecFunc
			var stop func()
			sb.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
				if cmd.Timeout > 0 && cmd.Timeout < 10*time.Second {
					// Reported as timed out at its time, but the tree is
					// left running until the next command has looked.
					tctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					long := cmd
					long.Timeout = 0
					done := make(chan struct{})
					left.Add(1)
					go func() {
						defer left.Done()
						defer close(done)
						_, _ = run(tctx, long, backends.Streams{Stdout: discard{}, Stderr: discard{}})
					}()
					stop = func() { cancel(); <-done }
					time.Sleep(cmd.Timeout)
					return backends.Result{Sandbox: sb.Name, TimedOut: true, ExitCode: 124}, nil
				}
				res, err := run(ctx, cmd, out)
				if stop != nil {
					stop()
					stop = nil
				}
				return res, err
			}
		}, nil},
		{"ignores the workdir", func(sb *Sandbox, _ *Harness) {
			if sb == nil {
				return
			}
			run := sb.ExecFunc
			sb.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
				cmd.Workdir = "/"
				return run(ctx, cmd, out)
			}
		}, []string{"workdir"}},
		{"a second close answers otherwise", func(sb *Sandbox, _ *Harness) {
			if sb == nil {
				return
			}
			sb.CloseFunc = func(n int) error {
				if n > 1 {
					return errors.New("already closed")
				}
				return nil
			}
		}, []string{"close"}},
		{"leaves something behind", func(_ *Sandbox, h *Harness) {
			if h == nil {
				return
			}
			h.Track = func(testing.TB) func(backends.Sandbox) func() []string {
				return func(backends.Sandbox) func() []string {
					return func() []string { return []string{"container 1234"} }
				}
			}
		}, []string{"close"}},
		{"runs commands before the deferred copy", func(sb *Sandbox, _ *Harness) {
			if sb == nil {
				return
			}
			run := sb.ExecFunc
			sb.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
				_ = sb.Stage(ctx) // as if the copy were in place
				return run(ctx, cmd, out)
			}
		}, []string{"deferred staging"}},
		{"runs commands after close", func(sb *Sandbox, _ *Harness) {
			if sb == nil {
				return
			}
			run := sb.ExecFunc
			sb.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
				res, err := run(ctx, cmd, out)
				if sb.Closes() > 0 {
					err = nil
				}
				return res, err
			}
		}, []string{"close"}},
	} {
		// All at once, not t.Parallel (bounded by the cores): each run is
		// mostly the timeout check's wait.
		left.Add(1)
		go func() {
			defer left.Done()
			got := recordSuite(t, hostFactory(tt.broken))
			var failed []string
			for name, fails := range got {
				if len(fails) > 0 {
					failed = append(failed, name)
				}
			}
			sort.Strings(failed)
			want := slices.Clone(tt.fail)
			sort.Strings(want)
			if tt.fail == nil {
				want = []string{"timeout"}
			}
			if !slices.Equal(failed, want) {
				t.Errorf("%s: failed checks %q, want %q; failures: %q", tt.name, failed, want, got)
			}
		}()
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// capped passes left bytes and drops the rest, as a backend with a cap of
// its own would.
type capped struct {
	w    interface{ Write([]byte) (int, error) }
	left int
}

func (c *capped) Write(p []byte) (int, error) {
	n := min(len(p), c.left)
	c.left -= n
	if n > 0 {
		if _, err := c.w.Write(p[:n]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
