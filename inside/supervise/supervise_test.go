package supervise

// The test binary itself is the supervising process: Run makes it a child
// subreaper and reaps its descendants, which is fine because go test runs
// each package in its own process. Run serializes its calls, so concurrent
// calls cannot steal each other's children; still, no test here uses
// t.Parallel, so that the generous time bounds stay meaningful and the
// "no child of this process is left" check sees only one test's tree.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
)

func runSpec(t *testing.T, s Spec) (Result, string, string, time.Duration) {
	t.Helper()
	var out, errb bytes.Buffer
	if s.Stdout == nil {
		s.Stdout = &out
	}
	if s.Stderr == nil {
		s.Stderr = &errb
	}
	start := time.Now()
	res := Run(context.Background(), s)
	return res, out.String(), errb.String(), time.Since(start)
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func TestExitAndOutput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello-from-path"), []byte("#!/bin/sh\necho hi \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	shared := &bytes.Buffer{}
	tests := []struct {
		name       string
		spec       Spec
		code, sig  int
		out, errs  string
		sharedWant string
	}{
		{name: "exit code and streams", spec: Spec{Argv: sh("echo out; echo err >&2; exit 3")}, code: 3, out: "out\n", errs: "err\n"},
		{name: "killed by signal", spec: Spec{Argv: sh("kill -USR1 $$; sleep 5")}, code: 128 + int(syscall.SIGUSR1), sig: int(syscall.SIGUSR1)},
		{name: "stdin from reader", spec: Spec{Argv: []string{"cat"}, Stdin: strings.NewReader("hello")}, out: "hello"},
		{name: "nil stdin is empty", spec: Spec{Argv: []string{"cat"}}},
		{name: "PATH of Env", spec: Spec{Argv: []string{"hello-from-path", "x"}, Env: []string{"PATH=" + dir}}, out: "hi x\n"},
		{name: "Env replaces environment", spec: Spec{Argv: sh(`echo "[$FOO][$HOME]"`), Env: []string{"PATH=/usr/bin:/bin", "FOO=bar"}}, out: "[bar][]\n"},
		{name: "Dir", spec: Spec{Argv: sh("pwd"), Dir: dir}, out: dir + "\n"},
		{name: "one writer keeps order", spec: Spec{Argv: sh("echo a; echo b >&2; echo c"), Stdout: shared, Stderr: shared}, sharedWant: "a\nb\nc\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shared.Reset()
			res, out, errs, _ := runSpec(t, tc.spec)
			if res.ExitCode != tc.code || res.Signal != tc.sig || res.TimedOut || res.LifelineCut || res.StartError != "" {
				t.Errorf("result %+v, want code %d signal %d", res, tc.code, tc.sig)
			}
			if out != tc.out || errs != tc.errs {
				t.Errorf("stdout %q stderr %q, want %q %q", out, errs, tc.out, tc.errs)
			}
			if got := shared.String(); got != tc.sharedWant {
				t.Errorf("shared output %q, want %q", got, tc.sharedWant)
			}
			assertNoChildren(t)
		})
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("echo no\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badInterp := filepath.Join(dir, "bad-interp")
	if err := os.WriteFile(badInterp, []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		spec Spec
		code int
		msg  string // StartError prefix
	}{
		{name: "not found in PATH", argv: []string{"triage-no-such-command"}, code: exitcode.NotFound, msg: "triage-no-such-command: command not found in the sandbox"},
		{name: "not found by path", argv: []string{filepath.Join(dir, "missing")}, code: exitcode.NotFound, msg: filepath.Join(dir, "missing") + ": command not found in the sandbox"},
		{name: "empty PATH", argv: []string{"sh"}, spec: Spec{Env: []string{"PATH="}}, code: exitcode.NotFound, msg: "sh: command not found in the sandbox"},
		{name: "not executable", argv: []string{plain}, code: exitcode.NotExecutable, msg: plain + ": cannot execute: permission denied"},
		{name: "directory", argv: []string{dir}, code: exitcode.NotExecutable, msg: dir + ": cannot execute: "},
		{name: "missing interpreter", argv: []string{badInterp}, code: exitcode.NotExecutable, msg: badInterp + ": cannot execute: "},
		{name: "missing Dir", argv: []string{"true"}, spec: Spec{Dir: filepath.Join(dir, "nodir")}, code: exitcode.NotExecutable, msg: "true: cannot execute: "},
		{name: "empty argv", code: exitcode.NotExecutable, msg: "cannot execute: empty command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			s.Argv = tc.argv
			res, out, errs, _ := runSpec(t, s)
			if res.ExitCode != tc.code || !strings.HasPrefix(res.StartError, tc.msg) {
				t.Fatalf("result %+v, want code %d, StartError starting %q", res, tc.code, tc.msg)
			}
			if errs != "triage-sandbox: "+res.StartError+"\n" || out != "" {
				t.Errorf("stdout %q stderr %q", out, errs)
			}
			assertNoChildren(t)
		})
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		name   string
		script string
		sig    syscall.Signal
	}{
		{name: "SIGTERM obeyed", script: "sleep 100", sig: syscall.SIGTERM},
		{name: "SIGTERM ignored", script: `trap "" TERM; sleep 100`, sig: syscall.SIGKILL},
	}
	const timeout, grace = 300 * time.Millisecond, 300 * time.Millisecond
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _, _, took := runSpec(t, Spec{Argv: sh(tc.script), Timeout: timeout, Grace: grace})
			if !res.TimedOut || res.ExitCode != exitcode.Timeout || res.Signal != int(tc.sig) || res.LifelineCut {
				t.Errorf("result %+v, want timeout killed by %v", res, tc.sig)
			}
			if took > timeout+grace+5*time.Second {
				t.Errorf("Run took %v", took)
			}
			if res.Duration < timeout {
				t.Errorf("Duration %v shorter than the timeout", res.Duration)
			}
			assertNoChildren(t)
		})
	}
}

// treeScript starts a setsid'd child and a double-forked daemon (both end
// as `sleep <marker>` with the pid recorded in dir) and waits until both
// are in place before going on with rest.
func treeScript(dir, ignoreTerm string, markers [2]string, rest string) string {
	return fmt.Sprintf(`%s
setsid sh -c 'echo $$ > %[2]s/a; exec sleep %[3]s' &
(setsid sh -c 'echo $$ > %[2]s/b; exec sleep %[4]s' &)
until [ -s %[2]s/a ] && [ -s %[2]s/b ]; do sleep 0.01; done
echo started
%[5]s`, ignoreTerm, dir, markers[0], markers[1], rest)
}

func TestTreeIsKilled(t *testing.T) {
	skipWithoutProc(t)
	tests := []struct {
		name     string
		trap     string
		rest     string
		timeout  time.Duration
		code     int
		timedOut bool
	}{
		{name: "exit 0 leaves setsid child and daemon", rest: "exit 0"},
		{name: "exit 4 leaves TERM-ignoring setsid child and daemon", trap: `trap "" TERM`, rest: "exit 4", code: 4},
		// Long enough for the tree to start on a loaded machine.
		{name: "timeout", rest: "sleep %s", timeout: 5 * time.Second, code: exitcode.Timeout, timedOut: true},
		{name: "timeout, TERM ignored", trap: `trap "" TERM`, rest: "sleep %s", timeout: 5 * time.Second, code: exitcode.Timeout, timedOut: true},
	}
	const grace = 300 * time.Millisecond
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := markers(t, 3)
			rest := tc.rest
			if strings.Contains(rest, "%s") {
				rest = fmt.Sprintf(rest, m[2])
			}
			res, out, _, took := runSpec(t, Spec{
				Argv: sh(treeScript(dir, tc.trap, [2]string{m[0], m[1]}, rest)), Timeout: tc.timeout, Grace: grace,
			})
			if res.ExitCode != tc.code || res.TimedOut != tc.timedOut || res.LifelineCut {
				t.Errorf("result %+v, want code %d timedOut %v", res, tc.code, tc.timedOut)
			}
			if out != "started\n" {
				t.Errorf("stdout %q: the daemons did not start in time", out)
			}
			if took > tc.timeout+grace+killBound+10*time.Second {
				t.Errorf("Run took %v", took)
			}
			assertTreeGone(t, dir, m)
		})
	}
}

func TestLifelineCut(t *testing.T) {
	skipWithoutProc(t)
	dir := t.TempDir()
	m := markers(t, 3)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte("ping")) // data on the lifeline means nothing
		waitStarted(dir)
		_ = pw.Close()
	}()
	res, _, _, took := runSpec(t, Spec{
		Argv:     sh(treeScript(dir, `trap "" TERM`, [2]string{m[0], m[1]}, "sleep "+m[2])),
		Lifeline: pr, Timeout: time.Hour,
	})
	if !res.LifelineCut || res.ExitCode != 137 || res.Signal != 9 || res.TimedOut {
		t.Errorf("result %+v, want lifeline cut", res)
	}
	if took > killBound+10*time.Second {
		t.Errorf("Run took %v", took)
	}
	assertTreeGone(t, dir, m)
}

func TestLifelineOutlivesCommand(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	// Neither a lifeline nor a stdin that never ends keeps Run waiting.
	res, _, _, _ := runSpec(t, Spec{Argv: sh("exit 7"), Lifeline: pr, Stdin: stdinR})
	if res.ExitCode != 7 || res.LifelineCut {
		t.Errorf("result %+v, want exit 7", res)
	}
	assertNoChildren(t)
}

func TestContextCancel(t *testing.T) {
	skipWithoutProc(t)
	dir := t.TempDir()
	m := markers(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		waitStarted(dir)
		cancel()
	}()
	start := time.Now()
	res := Run(ctx, Spec{Argv: sh(treeScript(dir, "", [2]string{m[0], m[1]}, "sleep "+m[2]))})
	if res.ExitCode != 137 || res.Signal != 9 || !res.LifelineCut {
		t.Errorf("result %+v, want killed by the cancel", res)
	}
	if took := time.Since(start); took > killBound+10*time.Second {
		t.Errorf("Run took %v", took)
	}
	assertTreeGone(t, dir, m)

	// Already cancelled: nothing starts.
	flag := filepath.Join(dir, "started")
	res = Run(ctx, Spec{Argv: []string{"touch", flag}})
	if res.ExitCode != 137 || !res.LifelineCut {
		t.Errorf("result %+v after cancel, want 137", res)
	}
	if _, err := os.Stat(flag); err == nil {
		t.Error("the command ran although ctx was cancelled")
	}
}

func TestConcurrentRuns(t *testing.T) {
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = Run(context.Background(), Spec{Argv: sh(fmt.Sprintf("sleep 0.1; exit %d", i+10))}).ExitCode
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != i+10 {
			t.Errorf("run %d: exit code %d, want %d", i, c, i+10)
		}
	}
	assertNoChildren(t)
}

func skipWithoutProc(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("finding survivors needs Linux /proc")
	}
	if _, err := lookPathHere("setsid"); err != nil {
		t.Skip("no setsid utility")
	}
}

func lookPathHere(name string) (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// markers returns unique sleep durations that identify this test's
// processes in /proc/*/cmdline; survivors are killed at cleanup.
func markers(t *testing.T, n int) []string {
	m := make([]string, n)
	for i := range m {
		m[i] = strconv.Itoa(1_000_000_000 + rand.IntN(900_000_000))
	}
	t.Cleanup(func() {
		for _, pid := range survivors(m) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil) // ECHILD unless Run left it to this process
		}
	})
	return m
}

// survivors lists processes running `sleep <marker>`.
func survivors(markers []string) []int {
	var pids []int
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		for _, a := range args[1:] {
			for _, m := range markers {
				if a == m {
					pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
					pids = append(pids, pid)
				}
			}
		}
	}
	return pids
}

// waitStarted returns once both daemons of treeScript wrote their pid
// files (at most 60 s): a cut before that would test nothing.
func waitStarted(dir string) {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		_, errA := os.Stat(filepath.Join(dir, "a"))
		_, errB := os.Stat(filepath.Join(dir, "b"))
		if errA == nil && errB == nil {
			return
		}
	}
}

// assertTreeGone checks that the recorded daemons and every `sleep <marker>`
// are gone, and that Run left no child (not even a zombie) behind.
func assertTreeGone(t *testing.T, dir string, markers []string) {
	t.Helper()
	for _, f := range []string{"a", "b"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("daemon %s never started: %v", f, err)
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Errorf("daemon %s pid %q", f, b)
			continue
		}
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			t.Errorf("daemon %s (pid %d) survived Run: kill 0 = %v", f, pid, err)
		}
	}
	if pids := survivors(markers); len(pids) > 0 {
		t.Errorf("processes %v survived Run", pids)
	}
	assertNoChildren(t)
}

// assertNoChildren checks that this process has no child left, zombie or not.
func assertNoChildren(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	self := os.Getpid()
	names, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(self) {
			t.Errorf("child left behind: %s", b)
		}
	}
}
