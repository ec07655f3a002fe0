package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Harness is what Suite runs a backend with (Nomad's DriverHarness is the
// model): the backend as the CLI's registry makes it, and policies built
// for it on this machine.
type Harness struct {
	Backend backends.Backend
	// Policy returns a new policy for the backend, with host directories
	// of the caller's test: commands start in its Workdir, and one of its
	// writable directories is on this host (the staging round trip writes
	// there).
	Policy func(t testing.TB) *policy.Policy
	// Track is called before a sandbox starts, and what it returns once
	// the sandbox is up, while it runs. That returns left, which lists
	// after Close what of the sandbox is left on this machine (container,
	// bundle, state directory, process, mount, pod): nil is nothing.
	Track func(t testing.TB) (up func(sb backends.Sandbox) (left func() []string))
}

// Factory makes a Harness for one group of the Suite's checks.
type Factory func(t testing.TB) Harness

// Bounds of the Suite's waits: generous, the machines that run it are busy.
const (
	// timeoutSlack is how long after its timeout a command's whole tree
	// may take to be stopped.
	timeoutSlack = 60 * time.Second
	// closeBound bounds a second Close (it returns the first's answer).
	closeBound = 10 * time.Second
)

// Suite runs the lifecycle every backend with a holder keeps: start, exec
// (streams, exit codes, input, whole output, start directory), timeout,
// the staged round trip at the start and later (DeferStaging), an
// idempotent Close, and nothing left after it. Output caps are not the
// backend's (package output applies them above it): the Suite checks the
// backend hands over all of the output, in order.
func Suite(t *testing.T, f Factory) {
	runSuite(t, f, func(name string, check func(testing.TB)) {
		t.Run(name, func(t *testing.T) { check(t) })
	})
}

// runSuite runs the Suite's checks through run: t.Run in Suite, a
// recorder in the Suite's own test (each check must fail against a broken
// backend).
func runSuite(t testing.TB, f Factory, run func(name string, check func(testing.TB))) {
	t.Helper()
	// What outlives one check (the policy's directories, the sandbox) is
	// the whole run's.
	l := &live{h: f(t)}
	l.prepare(t)
	t.Cleanup(func() {
		if l.sb != nil {
			_ = l.sb.Close(context.Background())
		}
	})
	run("start", l.start)
	for _, c := range lifecycleChecks {
		run(c.name, func(t testing.TB) {
			if l.sb == nil {
				t.Fatal("no sandbox: the start failed")
			}
			c.check(t, l)
		})
	}
	run("close", func(t testing.TB) {
		if l.sb == nil {
			t.Fatal("no sandbox: the start failed")
		}
		checkClose(t, l)
	})
	run("deferred staging", func(t testing.TB) { checkDeferred(t, f) })
}

// live is the sandbox the lifecycle checks share, and what they need of
// its policy.
type live struct {
	h    Harness
	p    *policy.Policy
	sb   backends.Sandbox
	left func() []string
	// dir is a writable directory of the policy on this host; in is the
	// file written there before the start, with inText.
	dir, in, inText string
	// notExec is a file there the command may not execute.
	notExec string
}

// prepare makes the policy and the host's files the checks read.
func (l *live) prepare(t testing.TB) {
	l.p = l.h.Policy(t)
	l.dir = writableDir(t, l.p)
	l.in, l.inText = filepath.Join(l.dir, unique(t, "in")), unique(t, "staged in ")
	writeFile(t, l.in, l.inText+"\n", 0o644)
	l.notExec = filepath.Join(l.dir, unique(t, "not-executable"))
	writeFile(t, l.notExec, "#!/bin/sh\necho ran\n", 0o644)
}

func (l *live) start(t testing.TB) {
	var up func(backends.Sandbox) func() []string
	if l.h.Track != nil {
		up = l.h.Track(t)
	}
	sb, err := l.h.Backend.Start(context.Background(), l.p, backends.StartOptions{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	l.sb = sb
	if up != nil {
		l.left = up(sb)
	}
	if sb.ID() == "" {
		t.Errorf("the sandbox has no ID (audit records and reports name it)")
	}
}

// ran is one command's end and output.
type ran struct {
	res            backends.Result
	stdout, stderr string
	took           time.Duration
}

// exec runs cmd in the sandbox; an error of the sandbox fails the check.
func exec(t testing.TB, sb backends.Sandbox, cmd backends.Command) ran {
	t.Helper()
	var stdout, stderr testenv.Buffer
	start := time.Now()
	res, err := sb.Exec(context.Background(), cmd, backends.Streams{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatalf("Exec(%q): %v", cmd.Argv, err)
	}
	return ran{res: res, stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
}

// sh is script run by sh with args as $1, $2...
func sh(script string, args ...string) backends.Command {
	return backends.Command{Argv: append([]string{"sh", "-c", script, "sh"}, args...)}
}

// lifecycleChecks run in order on one sandbox.
var lifecycleChecks = []struct {
	name  string
	check func(t testing.TB, l *live)
}{
	{"streams", checkStreams},
	{"exit codes", checkExitCodes},
	{"stdin", checkStdin},
	{"whole output", checkWholeOutput},
	{"workdir", checkWorkdir},
	{"staged round trip", checkRoundTrip},
	{"timeout", checkTimeout},
}

// checkStreams: stdout and stderr apart, exit 0, the result names the
// sandbox.
func checkStreams(t testing.TB, l *live) {
	r := exec(t, l.sb, sh("echo out; echo err >&2"))
	if r.res.ExitCode != 0 || r.res.TimedOut || r.stdout != "out\n" || r.stderr != "err\n" {
		t.Errorf("echo: %+v stdout %q stderr %q, want exit 0, %q and %q", r.res, r.stdout, r.stderr, "out\n", "err\n")
	}
	if r.res.Sandbox != l.sb.ID() {
		t.Errorf("the result names sandbox %q, the sandbox is %q", r.res.Sandbox, l.sb.ID())
	}
}

// checkExitCodes: the command's own code, and the shell's conventions for
// a command not found, not executable, or killed by a signal.
func checkExitCodes(t testing.TB, l *live) {
	for _, tt := range []struct {
		name         string
		cmd          backends.Command
		code, signal int
	}{
		{"own code", sh("exit 3"), 3, 0},
		{"not found", backends.Command{Argv: []string{"no-such-program-" + unique(t, "x")}}, 127, 0},
		{"not executable", backends.Command{Argv: []string{l.notExec}}, 126, 0},
		{"signal", sh("kill -TERM $$"), 128 + 15, 15},
	} {
		r := exec(t, l.sb, tt.cmd)
		if r.res.ExitCode != tt.code || r.res.Signal != tt.signal || r.res.TimedOut {
			t.Errorf("%s: exit %d signal %d (timed out %v), want %d and %d (stderr %q)",
				tt.name, r.res.ExitCode, r.res.Signal, r.res.TimedOut, tt.code, tt.signal, r.stderr)
		}
	}
}

// checkStdin: input given reaches the command; without it the command's
// stdin is closed (a cat ends at once).
func checkStdin(t testing.TB, l *live) {
	cmd := backends.Command{Argv: []string{"cat"}, Stdin: strings.NewReader("input\n")}
	if r := exec(t, l.sb, cmd); r.res.ExitCode != 0 || r.stdout != "input\n" {
		t.Errorf("cat with input: %+v %q", r.res, r.stdout)
	}
	cmd = backends.Command{Argv: []string{"cat"}, Timeout: 30 * time.Second}
	if r := exec(t, l.sb, cmd); r.res.ExitCode != 0 || r.res.TimedOut || r.stdout != "" {
		t.Errorf("cat without input: %+v %q, want it to end at once with nothing (stdin closed)", r.res, r.stdout)
	}
}

// checkWholeOutput: megabytes on both streams at once arrive whole and in
// order.
func checkWholeOutput(t testing.TB, l *live) {
	const outN, errN = 3_000_000, 1_000_000
	r := exec(t, l.sb, sh("yes 0123456789abcdef | head -c 3000000 & yes err | head -c 1000000 >&2; wait"))
	if r.res.ExitCode != 0 || len(r.stdout) != outN || len(r.stderr) != errN {
		t.Fatalf("exit %d, %d bytes on stdout and %d on stderr, want %d and %d", r.res.ExitCode, len(r.stdout), len(r.stderr), outN, errN)
	}
	want := strings.Repeat("0123456789abcdef\n", outN/17+1)[:outN]
	if r.stdout != want {
		t.Errorf("stdout is not the lines in order (first difference at byte %d)", firstDiff(r.stdout, want))
	}
	if wantErr := strings.Repeat("err\n", errN/4); r.stderr != wantErr {
		t.Errorf("stderr is not the lines in order (first difference at byte %d)", firstDiff(r.stderr, wantErr))
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// checkWorkdir: a command starts in the policy's workdir, or its own.
func checkWorkdir(t testing.TB, l *live) {
	if r := exec(t, l.sb, sh("pwd -P")); strings.TrimSpace(r.stdout) != canonical(l.p.Workdir) {
		t.Errorf("pwd = %q, want the policy's workdir %s", r.stdout, l.p.Workdir)
	}
	cmd := sh("pwd -P")
	cmd.Workdir = l.dir
	if r := exec(t, l.sb, cmd); strings.TrimSpace(r.stdout) != canonical(l.dir) {
		t.Errorf("pwd = %q, want the command's workdir %s", r.stdout, l.dir)
	}
}

// checkRoundTrip: the host's file is in the sandbox's writable path, and
// what the command writes there is on the host once it ended.
func checkRoundTrip(t testing.TB, l *live) {
	out := filepath.Join(l.dir, unique(t, "out"))
	r := exec(t, l.sb, sh(`cat "$1" && echo written > "$2"`, l.in, out))
	if r.res.ExitCode != 0 || r.stdout != l.inText+"\n" {
		t.Errorf("reading the host's file %s: exit %d, %q (stderr %q)", l.in, r.res.ExitCode, r.stdout, r.stderr)
	}
	if r.res.CopyBackError != "" {
		t.Errorf("copy back: %s", r.res.CopyBackError)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != "written\n" {
		t.Errorf("the sandbox's file on the host: %q, %v", got, err)
	}
}

// checkTimeout: the command's whole tree, one that ignores SIGTERM in its
// own session included, is killed soon after its timeout; the sandbox
// takes commands after it.
func checkTimeout(t testing.TB, l *live) {
	marker := unique(t, "suite-timeout")
	cmd := sh(`sleep 300 & setsid sh -c 'trap "" TERM; sleep 301' "$1" & wait`, marker)
	cmd.Timeout = 2 * time.Second
	r := exec(t, l.sb, cmd)
	if !r.res.TimedOut || r.took > cmd.Timeout+timeoutSlack {
		t.Errorf("timed out %v after %s (%+v), want it killed at %s", r.res.TimedOut, r.took, r.res, cmd.Timeout)
	}
	// The marker spelled so that the search's own command line does not
	// match it.
	pattern := "[" + marker[:1] + "]" + marker[1:]
	left := exec(t, l.sb, sh(`for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done | grep -c "$1"`, pattern))
	if strings.TrimSpace(left.stdout) != "0" {
		t.Errorf("processes of the timed-out tree still run in the sandbox: %q (stderr %q)", left.stdout, left.stderr)
	}
}

// checkClose: Close ends the sandbox, a second Close returns the first's
// answer at once, and nothing of the sandbox is left.
func checkClose(t testing.TB, l *live) {
	ctx := context.Background()
	first := l.sb.Close(ctx)
	if first != nil {
		t.Errorf("Close: %v", first)
	}
	start := time.Now()
	second := l.sb.Close(ctx)
	if !sameErr(first, second) || time.Since(start) > closeBound {
		t.Errorf("a second Close returned %v after %s, want the first's answer (%v) at once", second, time.Since(start), first)
	}
	if w := l.sb.Warnings(); first == nil && len(w) > 0 {
		t.Errorf("warnings after a clean close: %q", w)
	}
	if l.left == nil {
		t.Fatal("the harness has no Track: nothing left after Close cannot be checked")
	}
	if left := l.left(); len(left) > 0 {
		t.Errorf("left after Close: %q", left)
	}
	// A closed sandbox refuses a command, and does not hang on it.
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := l.sb.Exec(ectx, sh("echo after"), backends.Streams{Stdout: &testenv.Buffer{}, Stderr: &testenv.Buffer{}}); err == nil || ectx.Err() != nil {
		t.Errorf("Exec after Close: %v (context %v), want an error at once", err, ectx.Err())
	}
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
}

// checkDeferred: a sandbox started with DeferStaging runs no command
// before its Stage, and then sees the host as it is at the Stage.
func checkDeferred(t testing.TB, f Factory) {
	h := f(t)
	p := h.Policy(t)
	dir := writableDir(t, p)
	ctx := context.Background()
	sb, err := h.Backend.Start(ctx, p, backends.StartOptions{DeferStaging: true})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer sb.Close(ctx)
	late, text := filepath.Join(dir, unique(t, "late")), unique(t, "after the start ")
	writeFile(t, late, text+"\n", 0o644)
	st, ok := sb.(backends.Stager)
	if p.StagesIn() {
		if !ok {
			t.Fatalf("a sandbox of a staged policy is no backends.Stager")
		}
		var out testenv.Buffer
		if _, err := sb.Exec(ctx, sh("true"), backends.Streams{Stdout: &out, Stderr: &out}); err == nil {
			t.Errorf("a command ran before the deferred staged copy was in place")
		}
	}
	if ok {
		if err := st.Stage(ctx); err != nil {
			t.Fatalf("Stage: %v", err)
		}
		if err := st.Stage(ctx); err != nil {
			t.Errorf("a second Stage: %v, want nothing done", err)
		}
	}
	if r := exec(t, sb, sh(`cat "$1"`, late)); r.stdout != text+"\n" {
		t.Errorf("the file written after the start: %q (stderr %q), want the host as it was at Stage", r.stdout, r.stderr)
	}
}

// writableDir is a writable directory of p that is on this host (not the
// workspace root itself, whose files a test must not litter).
func writableDir(t testing.TB, p *policy.Policy) string {
	t.Helper()
	for _, m := range p.Mounts {
		if m.ReadOnly || m.Kind != "dir" {
			continue
		}
		if fi, err := os.Stat(m.Path); err == nil && fi.IsDir() {
			return m.Path
		}
	}
	t.Fatalf("the harness's policy has no writable directory on this host: %+v", p.Mounts)
	return ""
}

func writeFile(t testing.TB, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(path) })
}

// unique is prefix and a random suffix: a name no other test uses.
func unique(t testing.TB, prefix string) string {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	return prefix + "-" + hex.EncodeToString(r[:])
}

// canonical is path with its symbolic links resolved (pwd -P prints it).
func canonical(path string) string {
	if c, err := filepath.EvalSymlinks(path); err == nil {
		return c
	}
	return path
}
