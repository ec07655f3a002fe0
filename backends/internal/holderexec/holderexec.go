// Package holderexec runs one command in a started sandbox under the
// in-sandbox supervisor, for every backend whose sandbox is a holder
// process: the supervisor is started (by the holder over its control
// channel, or by a runtime exec), its output passes the start gate, its
// timeout and cancellation are enforced with the whole sandbox killed as
// the last resort, and the staged writable paths it exports are copied
// back to the host.
package holderexec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/staging"
	"github.com/triage-sandbox/triage-sandbox/inside/seccompfilter"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Bounds of a command's own steps.
const (
	AfterKillWait   = 5 * time.Second
	CopyBackTimeout = 2 * time.Minute
)

// LostOutputs is what a run says when the sandbox went before the copy back.
const LostOutputs = "the sandbox ended before its writable paths could be copied back; this command's outputs are lost"

// Sandbox is what the flow needs from the sandbox the command runs in.
type Sandbox interface {
	ID() string
	// Exited is closed once the sandbox (its holder) is gone.
	Exited() <-chan struct{}
	// Kill ends the whole sandbox at once; nothing is copied back after it.
	Kill()
	Killed() bool
	// Said is what the runtime or holder printed, for error lines ("" or
	// ": ...").
	Said() string
}

// Started is a supervisor on its way: its stdin (the command's input, or
// its lifeline) and how to wait for its end.
type Started struct {
	Stdin io.WriteCloser
	// Wait returns nil, an *ExitStatus, or why the end is unknown.
	Wait func() error
	// Stop, when set, ends the command's tree at once when the run is
	// cancelled; without it closing Stdin does (the lifeline), or the
	// sandbox is killed AfterKillWait later.
	Stop func()
}

// Starter starts the supervisor with spec, its stdout and stderr going to
// the gate, and exportW (when not nil) as its descriptor 3.
type Starter func(ctx context.Context, spec protocol.Exec, gate *OutputHold, exportW *os.File) (*Started, error)

// Run is one command's run.
type Run struct {
	Policy  *policy.Policy
	Sandbox Sandbox
	Start   Starter
	// ExportOnFD: the supervisor writes the staged paths on descriptor 3
	// once the command's tree is gone; Manifest is what the host has of
	// them, updated by the copy back.
	ExportOnFD bool
	Manifest   *stage.Manifest
	// Seccomp names a filter set the supervisor loads before the command,
	// for runtimes whose exec loads none.
	Seccomp string
	// Rlimits are the limits the supervisor sets on itself before the
	// command (none: it sets none), for a backend that cannot give its
	// command rlimits otherwise (a pod, sandbox-exec).
	Rlimits []protocol.Rlimit
	// OOMKills counts OOM kills in the sandbox (nil: unknown), waiting up
	// to settle for news still on its way (a cgroup gone, an event that
	// trails the kill). Exec asks it once before the command and once
	// after, with a settle only when the end could be an OOM kill.
	OOMKills func(settle time.Duration) uint64
	// OOMEndsSandbox: the memory limit ends the whole sandbox (gVisor's
	// kernel runs in its cgroup), so a command killed with news of an OOM
	// kill is awaited with its sandbox even while the sandbox still runs.
	OOMEndsSandbox bool
	// CopyBackBound bounds the copy back from its first byte (0:
	// CopyBackTimeout).
	CopyBackBound time.Duration
}

func (r Run) copyBackBound() time.Duration {
	if r.CopyBackBound > 0 {
		return r.CopyBackBound
	}
	return CopyBackTimeout
}

// oomSettle bounds the wait for news of an OOM kill after the command.
const oomSettle = 2 * time.Second

// SeccompFor is the filter set the supervisor loads on itself under
// runtime rt: a runtime whose exec loads no seccomp filter (gVisor's
// kernel gives one only to the container's first process) has the
// supervisor load the sandbox's, and its command inherits it; "" for the
// rest.
func SeccompFor(rt runtimes.Traits) string {
	if rt.SeccompOnExec {
		return ""
	}
	return seccompfilter.Sets()[0]
}

func (r Run) ended() bool {
	select {
	case <-r.Sandbox.Exited():
		return true
	default:
		return false
	}
}

// Exec runs cmd and returns how it ended. A supervisor that ended before
// it started the command gives a *NotStarted error: nothing ran.
func (r Run) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	res := backends.Result{Sandbox: r.Sandbox.ID()}
	_, staged := staging.StagePaths(r.Policy)
	spec := launch.ExecSpec(r.Policy, cmd)
	spec.Seccomp, spec.Rlimits = r.Seccomp, r.Rlimits
	var exportR, exportW *os.File
	if len(staged) > 0 && r.ExportOnFD {
		var err error
		if exportR, exportW, err = os.Pipe(); err != nil {
			return res, err
		}
		defer exportR.Close()
		spec = launch.WithExport(spec, r.Policy, 3)
	}
	gate := NewOutputHold(orDiscard(out.Stdout), orDiscard(out.Stderr))
	var oomBefore uint64
	if r.OOMKills != nil {
		oomBefore = r.OOMKills(0)
	}
	// The host's clock starts before the supervisor's, so it judges a
	// timeout no later than the supervisor enforces it.
	deadline := StartDeadline(cmd.Timeout)
	defer deadline.Stop()
	asked := time.Now()
	proc, err := r.Start(ctx, spec, gate, exportW)
	if exportW != nil {
		exportW.Close() // the supervisor's copy is the only writer now
	}
	if err != nil {
		return res, fmt.Errorf("starting the command: %w", err)
	}
	var applied chan applyResult
	if exportW != nil {
		applied = make(chan applyResult, 1)
		go func() { applied <- r.apply(ctx, exportR, staged) }()
	}
	werr := r.await(ctx, cmd, proc, gate, deadline, &res)
	res.Duration = gate.Since()
	ended := time.Now()
	// Phases as the host sees them: the supervisor's start ends at its
	// start marker, the command at the supervisor's end.
	phase.Span(ctx, "exec.supervisor-start", asked, gate.OpenedAt())
	phase.Span(ctx, "exec.command", gate.OpenedAt(), ended)
	if err := r.judge(&res, werr, gate, oomBefore); err != nil {
		return res, err
	}
	if applied != nil {
		r.finishCopyBack(&res, applied, exportR)
		phase.Span(ctx, "exec.copy-back", ended, time.Now())
	}
	if !res.TimedOut {
		res.Signal = signalOf(res.ExitCode)
	}
	return res, nil
}

// await feeds the command its input and waits for the supervisor's end,
// enforcing the timeout and a cancel.
func (r Run) await(ctx context.Context, cmd backends.Command, proc *Started, gate *OutputHold, deadline *Deadline, res *backends.Result) error {
	stdin := proc.Stdin
	done := make(chan error, 1)
	waited := make(chan struct{})
	go func() {
		done <- proc.Wait()
		close(waited)
	}()
	if cmd.Stdin != nil {
		go func() {
			// Input goes only to a supervisor that started: one that did
			// not must leave it for the next try.
			select {
			case <-gate.Started:
				_, _ = io.Copy(stdin, cmd.Stdin)
			case <-waited:
			case <-r.Sandbox.Exited():
			}
			_ = stdin.Close()
		}()
	}
	var werr error
	select {
	case werr = <-done:
		// The supervisor's own 124 can win the race on a busy host.
		res.TimedOut = deadline.Passed()
	case <-deadline.C:
		res.TimedOut = true
		werr = r.awaitOrKill(done, r.Policy.Lifetime.KillGrace+AfterKillWait)
	case <-ctx.Done():
		res.Canceled = true
		if proc.Stop != nil {
			proc.Stop()
		} else {
			_ = stdin.Close()
		}
		werr = r.awaitOrKill(done, AfterKillWait)
	case <-r.Sandbox.Exited():
		werr = r.awaitOrKill(done, time.Second)
	}
	if cmd.Stdin == nil {
		_ = stdin.Close()
	}
	return werr
}

// judge reads the supervisor's end, werr, into res: the command's code,
// an OOM kill, the sandbox's end under it.
func (r Run) judge(res *backends.Result, werr error, gate *OutputHold, oomBefore uint64) error {
	code := 0
	var ee *ExitStatus
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		code = ee.Code
	default:
		return fmt.Errorf("running the command: %w", werr)
	}
	if !gate.Opened() && !res.TimedOut && !res.Canceled {
		msg := strings.TrimSpace(gate.Failure())
		if msg == "" {
			msg = fmt.Sprintf("the supervisor ended with %d before it started the command", code)
		}
		return &NotStarted{Why: msg}
	}
	code = r.judgeOOM(res, code, oomBefore)
	if r.ended() && !res.TimedOut && !res.Canceled && !res.WholeSandboxOOM {
		return errors.New("the sandbox ended under the command; the result is unknown" + r.Sandbox.Said())
	}
	res.ExitCode = code
	switch {
	case res.Canceled:
		res.ExitCode = exitCanceled
	case res.TimedOut:
		res.ExitCode = exitTimedOut
	}
	return nil
}

// judgeOOM marks res OOM-killed when the sandbox counted an OOM kill
// during the command, and returns the command's code: the sandbox's
// SIGKILL when the memory limit took the whole sandbox.
func (r Run) judgeOOM(res *backends.Result, code int, oomBefore uint64) int {
	if r.OOMKills == nil || code < signalBase && !r.ended() {
		return code
	}
	// News still on its way can only matter for an end by SIGKILL or the
	// sandbox's, and not after a cancel (its own SIGKILL, its own end).
	var settle time.Duration
	if !res.Canceled && (r.ended() || code == ExitKilled) {
		settle = oomSettle
	}
	if r.OOMKills(settle) <= oomBefore {
		return code
	}
	res.OOMKilled = true
	if (code != ExitKilled || r.ended() || r.OOMEndsSandbox) && r.endsSoon(10*time.Second) {
		// The memory limit took the whole sandbox (gVisor's kernel runs
		// in the sandbox's cgroup): the command ended with it.
		res.WholeSandboxOOM = true
		return ExitKilled
	}
	return code
}

// endsSoon: the sandbox is gone, or goes within d.
func (r Run) endsSoon(d time.Duration) bool {
	select {
	case <-r.Sandbox.Exited():
		return true
	case <-time.After(d):
		return false
	}
}

// awaitOrKill waits for the supervisor to end; past d the whole sandbox
// is killed, which ends it for certain.
func (r Run) awaitOrKill(done <-chan error, d time.Duration) error {
	select {
	case err := <-done:
		return err
	case <-time.After(d):
	}
	r.Sandbox.Kill()
	select {
	case err := <-done:
		return err
	case <-time.After(AfterKillWait):
		return errors.New("the command did not end after the sandbox was killed")
	}
}

type applyResult struct {
	m   stage.Manifest
	rep stage.Report
	err error
}

// apply reads the supervisor's export as it comes and brings the host up
// to it.
func (r Run) apply(ctx context.Context, rd io.Reader, staged []stage.Path) applyResult {
	// The export starts once the command's whole tree is gone: the copy's
	// bound counts from there, not from the command's start (a test suite
	// may run for longer than the bound).
	br := bufio.NewReader(rd)
	_, _ = br.Peek(1)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.copyBackBound())
	defer cancel()
	m, rep, err := stage.Apply(ctx, br, *r.Manifest, staging.StageSpec(r.Policy, staging.ExportPaths(r.Policy, staged)))
	_, _ = io.Copy(io.Discard, br)
	return applyResult{m, rep, err}
}

// finishCopyBack waits for the copy back of the command that just ended.
// A supervisor that died before exporting leaves the pipe closed with no
// end entry: nothing is deleted and the run says its outputs were lost.
func (r Run) finishCopyBack(res *backends.Result, applied <-chan applyResult, rd *os.File) {
	var a applyResult
	select {
	case a = <-applied:
	case <-time.After(r.copyBackBound()):
		_ = rd.Close()
		a = <-applied
	}
	*r.Manifest = a.m
	res.CopyBack = &a.rep
	if a.err != nil {
		res.CopyBackError = a.err.Error()
		if r.ended() || r.Sandbox.Killed() {
			res.CopyBackError = LostOutputs
		}
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Export streams the sandbox's export of the staged outputs and applies
// it to the host: what was applied, and why the copy back failed.
type Export func(ctx context.Context, out []stage.Path) (*stage.Report, error)

// CopyBack is the copy back of backends whose runtime starts the export:
// after every command however it ended, nothing without staged outputs,
// LostOutputs when the sandbox is gone (ended or killed), otherwise export
// bounded by CopyBackTimeout and not cancelled with the run, so a
// cancelled run still keeps what its command wrote.
func CopyBack(ctx context.Context, p *policy.Policy, gone func() bool, export Export, res *backends.Result) {
	_, out := staging.StagePaths(p)
	if len(out) == 0 {
		return
	}
	if gone() {
		res.CopyBackError = LostOutputs
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CopyBackTimeout)
	defer cancel()
	rep, err := export(ctx, out)
	res.CopyBack = rep
	if err != nil {
		res.CopyBackError = err.Error()
	}
}
