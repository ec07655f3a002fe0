// Package supervise is the one process supervisor of triage-sandbox: it runs
// one command, enforces its timeout and kills the command's whole process
// tree, setsid'd children and double-forked daemons included.
//
// It is meant to run in a dedicated helper process (the in-container exec
// helper or a re-exec'd helper on the host) or in a sandbox's holder: on
// Linux it makes that process a child subreaper and treats every
// descendant of the process as part of the tree, so the process must start
// no other children but those Spec.Others names (the holder's). Run calls
// in one process are serialized for the same reason: orphans cannot be
// attributed to one of several concurrent commands.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
)

// Spec is one command to supervise.
type Spec struct {
	Argv           []string  // argv[0] looked up in PATH of Env (or of this process when Env is nil)
	Env            []string  // nil = inherit
	Dir            string    // "" = inherit
	Stdin          io.Reader // nil = /dev/null
	Stdout, Stderr io.Writer // nil = /dev/null
	// Timeout counts from the command's start; 0 = none. At the timeout the tree gets SIGTERM,
	// then SIGKILL after Grace (default 1s when 0).
	Timeout time.Duration
	Grace   time.Duration
	// Lifeline, when non-nil, is a reader whose EOF (or error) means the owner is gone:
	// the whole tree is SIGKILLed at once. Read and discard its data.
	// Run does not wait for it: the goroutine reading it ends at its EOF.
	Lifeline io.Reader
	// SweepStrays: this supervisor runs in a sandbox whose pid 1 is its
	// holder or an init above it. Where the kernel has no subreapers
	// (gVisor), a command's orphans go to pid 1 and out of reach of the
	// tree; then, when no other supervisor runs, everything in the sandbox
	// but pid 1, the holder and this supervisor is killed before the
	// command starts and after its tree is gone.
	SweepStrays bool
	// Within, when set, runs f on the one thread the command must be
	// started and signalled from (a resident supervisor in a holder
	// confined by Landlock without thread sync: a thread signals only
	// what it started); nil runs it where Run is.
	Within func(f func())
	// Others, when set, names the children of this process that are not
	// the command's tree (with all below them): processes started beside
	// it (a resident supervisor's holder starts supervisors too).
	Others func(pid int) bool
	// Score, when set, is this process's own OOM score, raised around
	// the command's fork (see OwnScore), so the command has it from its
	// first instruction; nil: it is written to the command's /proc once
	// it is forked, which the command's first child can beat.
	Score *OwnScore
}

// Result is how it ended.
type Result struct {
	ExitCode int // shell-style: the command's code, 128+N when killed by signal N, 124 on timeout, 126 not executable, 127 not found
	Signal   int // N when killed by a signal
	TimedOut bool
	// LifelineCut: the lifeline was cut (or ctx cancelled) before the command exited.
	LifelineCut bool
	Duration    time.Duration // from the command's start to its exit (not the tree's)
	// StartError is set (with ExitCode 126/127) when the command could not start; the message is
	// "<argv0>: command not found in the sandbox" or "<argv0>: cannot execute: <err>" and has
	// also been written as one line "triage-sandbox: <message>" to Stderr.
	StartError string
	// Alone: the last scan of the tree's end found no process in the
	// sandbox (its /proc) but pid 1, this process and the command (Linux
	// only; false when not known).
	Alone bool
}

const (
	defaultGrace = time.Second
	// killBound caps the final SIGKILL loop so Run can never hang on a
	// process that will not die (uninterruptible sleep).
	killBound = 5 * time.Second
	// drainIdle is how long output may stay idle after the tree is gone
	// before the pipes are closed: a holder outside the tree (an fd passed
	// away) must not keep Run waiting.
	drainIdle = 2 * time.Second
	// defaultPath is execvp's search path when the environment has no PATH.
	defaultPath = "/bin:/usr/bin"
)

// runSlot serializes Run: the tree is "every descendant of this process".
var runSlot = make(chan struct{}, 1)

// Run runs s and returns only when the command and every descendant are gone.
// Cancelling ctx kills the tree like a lifeline cut (Result gets ExitCode 137 and Signal 9 unless it already exited).
func Run(ctx context.Context, s Spec) Result {
	if ctx == nil {
		ctx = context.Background()
	}
	select {
	case runSlot <- struct{}{}:
	case <-ctx.Done():
		return cutResult()
	}
	defer func() { <-runSlot }()
	if ctx.Err() != nil {
		return cutResult()
	}
	c, failed, ok := resolve(s)
	if !ok {
		return failed
	}

	// Always a subreaper where the kernel has them: orphans of the tree
	// must come here, not to the holder that would take them for leftovers.
	subreaper := becomeSubreaper()
	strays := s.SweepStrays && !subreaper
	if strays {
		sweepStrays()
	}
	r, sio, failed, ok := startCommand(ctx, s, c)
	if !ok {
		return failed
	}
	res, emptied := r.await(s.Timeout, s.Grace)
	r.killAll(emptied)
	if strays {
		sweepStrays()
	}
	r.settle(&res)
	res.Alone = r.t.alone && !strays && r.exited()
	sio.finish()
	return res
}

// within is the Spec's thread runner, or one that runs f where it is.
func within(w func(func())) func(func()) {
	if w != nil {
		return w
	}
	return func(f func()) { f() }
}

// cutResult is the result of a command cut before it exited.
func cutResult() Result {
	return Result{ExitCode: exitcode.Signaled(int(syscall.SIGKILL)), Signal: int(syscall.SIGKILL), LifelineCut: true}
}

// command is a Spec resolved for exec.
type command struct {
	argv0 string
	path  string   // argv0 looked up in env's PATH
	env   []string // with the tree's tag
	tag   string
}

// resolve checks that s can start: an argv, a directory that is one and
// an executable found. ok is false with the start failure otherwise.
func resolve(s Spec) (c command, failed Result, ok bool) {
	if len(s.Argv) == 0 {
		return c, startFailed(s, exitcode.NotExecutable, "cannot execute: empty command"), false
	}
	c.argv0 = s.Argv[0]
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	c.env, c.tag = treeEnv(env)
	if s.Dir != "" {
		if fi, err := os.Stat(s.Dir); err != nil {
			return c, startFailed(s, exitcode.NotExecutable, c.argv0+": cannot execute: "+err.Error()), false
		} else if !fi.IsDir() {
			return c, startFailed(s, exitcode.NotExecutable, c.argv0+": cannot execute: chdir "+s.Dir+": not a directory"), false
		}
	}
	if c.path, ok = lookPath(c.argv0, c.env, s.Dir); !ok {
		return c, startFailed(s, exitcode.NotFound, c.argv0+": command not found in the sandbox"), false
	}
	return c, Result{}, true
}

// startCommand forks c with s's standard files and starts watching its
// exit, the lifeline and ctx. ok is false with the start failure otherwise.
func startCommand(ctx context.Context, s Spec, c command) (_ *run, _ *stdio, failed Result, ok bool) {
	ReserveThreads()
	sio, err := newStdio(s)
	if err != nil {
		return nil, nil, startFailed(s, exitcode.NotExecutable, c.argv0+": cannot execute: "+err.Error()), false
	}
	// Fd puts the files in blocking mode, as the child expects.
	fds := []uintptr{sio.child[0].Fd(), sio.child[1].Fd(), sio.child[2].Fd()}
	var pid int
	var raised bool
	within(s.Within)(func() {
		// With s.Score the command inherits the OOM killer's first choice
		// from its first instruction. Without it (or where it could not be
		// raised) preferForOOM below writes it through the command's /proc.
		raised, _ = s.Score.Raised(func() {
			pid, err = syscall.ForkExec(c.path, s.Argv, &syscall.ProcAttr{
				Dir: s.Dir, Env: c.env, Files: fds, Sys: sysProcAttr(),
			})
		})
	})
	start := time.Now()
	runtime.KeepAlive(sio.child)
	sio.afterStart()
	if err != nil {
		sio.finish()
		code, msg := startErr(c.argv0, c.path, s.Dir, err)
		return nil, nil, startFailed(s, code, msg), false
	}

	r := &run{t: &tree{pid: pid, self: os.Getpid(), tag: c.tag, within: within(s.Within), others: s.Others},
		start: start, mainDone: make(chan struct{})}
	if !raised {
		r.t.preferForOOM()
	}
	r.watch(ctx, s.Lifeline)
	return r, sio, Result{}, true
}

// watch starts noticing the command's exit and the lifeline's cut.
func (r *run) watch(ctx context.Context, lifeline io.Reader) {
	go func() {
		r.t.waitExited()
		r.exitedAt = time.Now()
		close(r.mainDone)
	}()
	if lifeline != nil {
		r.cut = make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, lifeline)
			close(r.cut)
		}()
	}
	r.ctxDone = ctx.Done()
}

// await waits for the command's exit, its timeout or a cut, and then, but
// for a cut, gives the tree SIGTERM and grace to end. The Result says
// whether it timed out or was cut; emptied, that its last scan of the tree
// found nothing left (the first of killAll's two empty scans).
func (r *run) await(timeoutAfter, grace time.Duration) (res Result, emptied bool) {
	var timeout <-chan time.Time
	if timeoutAfter > 0 {
		timer := time.NewTimer(timeoutAfter)
		defer timer.Stop()
		timeout = timer.C
	}
	if grace <= 0 {
		grace = defaultGrace
	}

	cutFirst := false
	select {
	case <-r.mainDone:
	case <-timeout:
		res.TimedOut = !r.exited()
	case <-r.cut:
		cutFirst = true
	case <-r.ctxDone:
		cutFirst = true
	}
	if cutFirst {
		res.LifelineCut = !r.exited()
	} else {
		// A normal exit still ends the tree: background jobs get the same
		// SIGTERM-then-SIGKILL as a timed-out command. A scan that found
		// none left (the usual end) needs no SIGCONT and no grace: killAll's
		// scan makes the second empty one in a row.
		left, killed := r.t.termThenKill()
		r.groupKilled = killed
		if left == 0 {
			return res, true
		}
		r.t.kill(syscall.SIGCONT)
		cut, emptied := r.graceWait(grace)
		if cut && !r.exited() {
			res.LifelineCut = true
		}
		return res, emptied
	}
	return res, false
}

// settle reaps the command and sets res's duration, exit code and signal;
// a timeout or a cut decides the code over the command's own.
func (r *run) settle(res *Result) {
	ws, status := r.collect()
	switch {
	case !status:
		// The command outlived SIGKILL and killBound; it was SIGKILLed.
		res.Duration = time.Since(r.start)
		res.ExitCode, res.Signal = exitcode.Signaled(int(syscall.SIGKILL)), int(syscall.SIGKILL)
	case ws.Signaled():
		res.Duration = r.exitedAt.Sub(r.start)
		res.Signal = int(ws.Signal())
		res.ExitCode = exitcode.Signaled(res.Signal)
	default:
		res.Duration = r.exitedAt.Sub(r.start)
		res.ExitCode = ws.ExitStatus()
	}
	if res.TimedOut {
		res.ExitCode = exitcode.Timeout
	}
	if res.LifelineCut {
		res.ExitCode, res.Signal = exitcode.Signaled(int(syscall.SIGKILL)), int(syscall.SIGKILL)
	}
}

// run is the state of one started command.
type run struct {
	t        *tree
	start    time.Time     // when the command was started
	mainDone chan struct{} // closed when the command has exited
	exitedAt time.Time     // written before mainDone is closed
	cut      chan struct{} // closed at the lifeline's EOF; nil without one
	ctxDone  <-chan struct{}
	// groupKilled: termThenKill sent the process group its SIGKILL.
	groupKilled bool
}

func (r *run) exited() bool {
	select {
	case <-r.mainDone:
		return true
	default:
		return false
	}
}

// graceWait waits up to grace for the tree to die on its own after SIGTERM.
// It reports whether the lifeline was cut (or ctx cancelled) meanwhile, and
// whether its last scan found the tree empty.
func (r *run) graceWait(grace time.Duration) (cut, emptied bool) {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if r.t.kill(0) == 0 {
			return false, true
		}
		select {
		case <-deadline.C:
			return false, false
		case <-r.cut:
			return true, false
		case <-r.ctxDone:
			return true, false
		case <-tick.C:
		}
	}
}

// killAll SIGKILLs the tree until nothing of it is left (zombies reaped),
// for at most killBound. Two empty scans in a row are required because one
// scan of /proc is not an atomic snapshot; emptied says the scan just
// before (await's) was the first. The usual end (a command that left
// nothing) thus costs one more scan and no pause: a pause only spaces the
// retries while something is left.
func (r *run) killAll(emptied bool) {
	deadline := time.Now().Add(killBound)
	pause := 500 * time.Microsecond
	empty := 0
	if emptied {
		empty = 1
	}
	for first := true; ; first = false {
		var left int
		if first && r.groupKilled {
			// The group's SIGKILL went with the SIGTERM (termThenKill):
			// this round's scan is the second, signalling only what it
			// finds left.
			if left = r.t.kill(0); left > 0 {
				left = r.t.kill(syscall.SIGKILL)
			}
		} else {
			left = r.t.kill(syscall.SIGKILL)
		}
		if left == 0 {
			empty++
		} else {
			empty = 0
		}
		if empty >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(pause)
		if pause < 50*time.Millisecond {
			pause *= 2
		}
	}
	wait := time.Until(deadline)
	if wait < 100*time.Millisecond {
		wait = 100 * time.Millisecond
	}
	select {
	case <-r.mainDone:
	case <-time.After(wait):
	}
}

// collect reaps the command. ok is false when it has not exited even after
// SIGKILL; then it is reaped in the background.
func (r *run) collect() (ws syscall.WaitStatus, ok bool) {
	if !r.exited() {
		go func() {
			<-r.mainDone
			_, _ = r.t.collect()
		}()
		return 0, false
	}
	ws, err := r.t.collect()
	return ws, err == nil
}

// startFailed reports a command that could not start, also on its Stderr.
func startFailed(s Spec, code int, msg string) Result {
	if s.Stderr != nil {
		fmt.Fprintf(s.Stderr, "triage-sandbox: %s\n", msg)
	}
	return Result{ExitCode: code, StartError: msg}
}

// startErr maps an exec failure to a shell-style code and message.
func startErr(argv0, path, dir string, err error) (int, string) {
	var errno syscall.Errno
	if errors.As(err, &errno) && errno == syscall.ENOENT {
		p := path
		if dir != "" && !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, serr := os.Stat(p); serr != nil {
			return exitcode.NotFound, argv0 + ": command not found in the sandbox"
		}
		// The file is there: its #! interpreter or ELF loader is not.
		return exitcode.NotExecutable, argv0 + ": cannot execute: " + err.Error() + " (missing interpreter or loader)"
	}
	return exitcode.NotExecutable, argv0 + ": cannot execute: " + err.Error()
}

// lookPath resolves argv0 like execvp against env's PATH. A name with a
// slash is used as is. Failing an executable match, a non-executable one is
// returned so exec reports "permission denied" (126) as shells do.
func lookPath(argv0 string, env []string, dir string) (string, bool) {
	if strings.Contains(argv0, "/") {
		return argv0, true
	}
	if argv0 == "" {
		return "", false
	}
	pathVar, found := defaultPath, false
	for i := len(env) - 1; i >= 0 && !found; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			pathVar, found = v, true
		}
	}
	fallback := ""
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		cand := filepath.Join(d, argv0)
		if !filepath.IsAbs(cand) {
			cand = "." + string(filepath.Separator) + cand
		}
		check := cand
		if dir != "" && !filepath.IsAbs(check) {
			check = filepath.Join(dir, check)
		}
		fi, err := os.Stat(check)
		if err != nil || fi.IsDir() {
			continue
		}
		if fi.Mode()&0o111 != 0 {
			return cand, true
		}
		if fallback == "" {
			fallback = cand
		}
	}
	return fallback, fallback != ""
}

// stdio holds the command's three standard files and the goroutines
// copying between them and the Spec's readers and writers.
type stdio struct {
	child      [3]*os.File
	closeChild []*os.File // opened here; closed after start
	stdinW     *os.File
	readEnds   []*os.File
	copied     atomic.Int64
	copiers    sync.WaitGroup
}

func newStdio(s Spec) (_ *stdio, err error) {
	sio := &stdio{}
	defer func() {
		if err != nil {
			sio.afterStart()
			sio.finish()
		}
	}()
	switch in := s.Stdin.(type) {
	case nil:
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		sio.child[0] = f
		sio.closeChild = append(sio.closeChild, f)
	case *os.File:
		sio.child[0] = in
	default:
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		sio.child[0], sio.stdinW = pr, pw
		sio.closeChild = append(sio.closeChild, pr)
		go func() {
			_, _ = io.Copy(pw, in)
			_ = pw.Close()
		}()
	}
	if sio.child[1], err = sio.output(s.Stdout); err != nil {
		return nil, err
	}
	if sameWriter(s.Stdout, s.Stderr) {
		sio.child[2] = sio.child[1]
	} else if sio.child[2], err = sio.output(s.Stderr); err != nil {
		return nil, err
	}
	return sio, nil
}

// output returns the child's file for w.
func (sio *stdio) output(w io.Writer) (*os.File, error) {
	switch w := w.(type) {
	case nil:
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		sio.closeChild = append(sio.closeChild, f)
		return f, nil
	case *os.File:
		return w, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	sio.closeChild = append(sio.closeChild, pw)
	sio.readEnds = append(sio.readEnds, pr)
	sio.copiers.Add(1)
	go func() {
		defer sio.copiers.Done()
		_, _ = io.Copy(countingWriter{w, &sio.copied}, pr)
	}()
	return pw, nil
}

// afterStart closes this process's copies of the child's ends.
func (sio *stdio) afterStart() {
	for _, f := range sio.closeChild {
		_ = f.Close()
	}
	sio.closeChild = nil
}

// finish drains the output pipes and releases everything. The tree is gone,
// so the pipes reach EOF unless something outside it holds them: after
// drainIdle without output they are closed.
func (sio *stdio) finish() {
	if sio.stdinW != nil {
		// The copier may sit in a Read of Spec.Stdin forever; it is not waited for.
		_ = sio.stdinW.Close()
	}
	done := make(chan struct{})
	go func() {
		sio.copiers.Wait()
		close(done)
	}()
	last, idleSince := sio.copied.Load(), time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tick.C:
			if n := sio.copied.Load(); n != last {
				last, idleSince = n, time.Now()
			} else if time.Since(idleSince) > drainIdle {
				break wait
			}
		}
	}
	for _, f := range sio.readEnds {
		_ = f.Close()
	}
	// A copier still writing must finish before the writers go back to the caller.
	<-done
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// sameWriter reports whether a and b are the same writer, so stdout and
// stderr share one pipe and keep their order (as os/exec does).
func sameWriter(a, b io.Writer) (same bool) {
	if a == nil || b == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
