package selftest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/hostprep"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// phaseResult is one sandbox phase's evidence, or why it has none.
type phaseResult struct {
	ev  *Evidence
	err error
}

// phaseRuns is the evidence of one role's runs: each hostile check's
// control on the host, the control run's own evidence, and each sandbox
// phase's.
type phaseRuns struct {
	controls  map[string]*controlResult
	controlEv []*Evidence
	phases    map[Phase]phaseResult
}

// phaseClock records how long each part of a role's selftest took; phases
// running side by side record into it together.
type phaseClock struct {
	mu   sync.Mutex
	took map[string]time.Duration
}

func (c *phaseClock) record(name string, since time.Time) {
	c.mu.Lock()
	c.took[name] = time.Since(since)
	c.mu.Unlock()
}

// runPhases prepares the writable paths, runs the controls on the host
// that the sandbox runs must wait for, restores the canaries they used,
// then runs every sandbox phase while the other controls finish. The
// report gets each part's duration and the kernel the sandbox presents.
func runPhases(ctx context.Context, o Options, plan *rolePlan, rr *RoleReport) (*phaseRuns, error) {
	e := plan.env
	if err := hostprep.Writable(e.P); err != nil {
		return nil, err
	}
	clock := &phaseClock{took: map[string]time.Duration{}}
	rr.Phases = clock.took
	runs := &phaseRuns{}
	t0 := time.Now()
	controls := startControls(ctx, o, e, plan.checks, clock)
	clock.record("controls", t0)
	if err := e.C.Replant(); err != nil {
		controls.background.Wait()
		return nil, fmt.Errorf("restoring canaries after the control run: %w", err)
	}
	cleanWritable(e.P)
	runs.phases = runSandboxPhases(ctx, o, e, plan.checks, clock)
	runs.controls, runs.controlEv = controls.wait()
	if mainEv := runs.phases[PhaseMain].ev; mainEv != nil && mainEv.Obs[kernelInfo].OK {
		rr.Versions["kernel_in_sandbox"] = mainEv.Obs[kernelInfo].Detail
	}
	return runs, nil
}

// longPoles are the phases whose runs take longest (the timeout's fixed
// limit and grace, Chromium, the memory past its limit, which ends the
// shared chain) and main, which the second run follows: their sandboxes
// start first.
var longPoles = []Phase{PhaseMain, PhaseTimeout, PhaseBrowser, PhaseMemory}

// sharedChain are the phases that run one after another in one sandbox
// (each sandbox start costs the host about 0.4 s of CPU on docker, and on
// 2 cores the selftest is bound by CPU): the fork past the process limit,
// the fill, then the memory past its limit (last: under gVisor it ends
// the whole sandbox). Each leaves nothing the next could meet (the forks
// are reaped, the fill removes what it made, the memory is freed with its
// process), and a phase whose command did not end as planned leaves the
// sandbox to be replaced by a fresh one, so no phase's verdict depends on
// another's.
var sharedChain = []Phase{PhaseProcesses, PhaseFill, PhaseMemory}

// phaseHooks are what runPhase calls around its run: first in the started
// sandbox before the phase's command, started once its Start returned
// (whether or not the sandbox started); shared is the sandbox of a chain
// (nil: the phase starts and closes its own).
type phaseHooks struct {
	first   func(*sandbox.Session)
	started func()
	shared  *phaseSandbox
}

// runSandboxPhases runs the main phase, then the second; the others run
// beside them, as they do not touch the host-side evidence (snapshots,
// listener counts) those two own. The output flood is the first command of
// the timeout phase's sandbox (a sandbox start less; the flood has ended,
// its output judged apart, before the timeout's command starts).
// Long poles first: the other phases start their sandboxes once the long
// poles' starts returned. On 2 cores the starts contend (docker's 13
// containers at once took 1.7 s each), and a short phase's start only
// delays a long one, which the whole selftest waits for.
func runSandboxPhases(ctx context.Context, o Options, e *Env, checks []Check, clock *phaseClock) map[Phase]phaseResult {
	results := map[Phase]phaseResult{}
	var mu sync.Mutex
	set := func(ph Phase, ev *Evidence, err error) {
		mu.Lock()
		results[ph] = phaseResult{ev, err}
		mu.Unlock()
	}
	// A pooled sandbox runs exactly one command.
	shareOutput := o.Warm != "pool" && hasPhase(checks, PhaseTimeout) && hasPhase(checks, PhaseOutput)
	chain := chainPhases(o, checks)
	var side, longStarted sync.WaitGroup
	run := func(ph Phase) bool {
		return ph == PhaseMain || (hasPhase(checks, ph) && !(ph == PhaseOutput && shareOutput) && !slices.Contains(chain, ph))
	}
	startedHook := func(ph Phase) func() {
		if !slices.Contains(longPoles, ph) || !run(ph) {
			return nil
		}
		longStarted.Add(1)
		return sync.OnceFunc(longStarted.Done)
	}
	// Every long pole is counted before a short phase may wait: main here,
	// the chain (a long pole: it ends with the memory) and the others come
	// first in the list below.
	mainHooks := phaseHooks{started: startedHook(PhaseMain)}
	if len(chain) > 0 {
		longStarted.Add(1)
		chainStarted := sync.OnceFunc(longStarted.Done)
		side.Add(1)
		go func() {
			defer side.Done()
			defer chainStarted() // also when no phase reached its Start
			runChain(ctx, o, e, checks, chain, clock, chainStarted, set)
		}()
	}
	for _, ph := range []Phase{PhaseTimeout, PhaseBrowser, PhaseMemory, PhaseOutput, PhaseProcesses, PhaseFill, PhaseNetwork} {
		if !run(ph) {
			continue
		}
		hooks := phaseHooks{started: startedHook(ph)}
		flooded := false
		if ph == PhaseTimeout && shareOutput {
			hooks.first = floodFirst(ctx, o, e, clock, set, &flooded)
		}
		first := hooks.first
		side.Add(1)
		go func() {
			defer side.Done()
			if hooks.started == nil {
				longStarted.Wait()
			}
			defer clock.record(phaseName(ph), time.Now())
			ev, err := runPhase(ctx, o, e, checks, ph, clock, hooks)
			set(ph, ev, err)
			if first != nil && !flooded {
				// The sandbox did not start: the flood shares its error.
				set(PhaseOutput, nil, err)
			}
		}()
	}
	t0 := time.Now()
	mainEv, mainErr := runPhase(ctx, o, e, checks, PhaseMain, clock, mainHooks)
	clock.record("main", t0)
	t0 = time.Now()
	secondEv, secondErr := runPhase(ctx, o, e, checks, PhaseSecond, clock, phaseHooks{})
	clock.record("second", t0)
	side.Wait()
	if o.Warm == "pool" && o.EndWarm != nil {
		o.EndWarm(o.warmPolicy(e.P, "")) // the role's pool: nothing is left
	}
	results[PhaseMain] = phaseResult{mainEv, mainErr}
	results[PhaseSecond] = phaseResult{secondEv, secondErr}
	return results
}

// floodFirst is the timeout phase's first command when the flood shares
// its sandbox: it runs the flood and records its result; *flooded says it
// ran.
func floodFirst(ctx context.Context, o Options, e *Env, clock *phaseClock, set func(Phase, *Evidence, error), flooded *bool) func(*sandbox.Session) {
	return func(sess *sandbox.Session) {
		t0 := time.Now()
		ev, err := outputExec(ctx, o, e, sess.Exec)
		clock.record(phaseName(PhaseOutput), t0)
		set(PhaseOutput, ev, err)
		*flooded = true
	}
}

// chainPhases are the phases of sharedChain this role runs, when two or
// more share a sandbox: a pooled sandbox runs exactly one command, so
// under --warm pool each keeps a sandbox of its own.
func chainPhases(o Options, checks []Check) []Phase {
	if o.Warm == "pool" {
		return nil
	}
	var chain []Phase
	for _, ph := range sharedChain {
		if hasPhase(checks, ph) {
			chain = append(chain, ph)
		}
	}
	if len(chain) < 2 {
		return nil
	}
	return chain
}

// runChain runs the chain's phases one after another in one sandbox
// (a fresh one after a phase that spoiled it), then closes it.
func runChain(ctx context.Context, o Options, e *Env, checks []Check, chain []Phase, clock *phaseClock, started func(), set func(Phase, *Evidence, error)) {
	ps := &phaseSandbox{o: o, e: e, clock: clock, started: started}
	defer ps.close(ctx)
	for _, ph := range chain {
		t0 := time.Now()
		ev, err := runPhase(ctx, o, e, checks, ph, clock, phaseHooks{shared: ps})
		clock.record(phaseName(ph), t0)
		set(ph, ev, err)
	}
}

func hasPhase(checks []Check, ph Phase) bool {
	for _, ch := range checks {
		if ch.Phase == ph {
			return true
		}
	}
	return false
}

// cleanWritable removes what probes leave in the writable paths.
func cleanWritable(p *policy.Policy) {
	for _, w := range p.Writable() {
		for _, name := range []string{".selftest-readlink", ".selftest-writelink", ".selftest-hardlink", ".selftest-fill", reproFile, plantDir} {
			_ = os.RemoveAll(w + "/" + name)
		}
	}
}

// kernelInfo is the main run's step that reads the kernel release the
// sandbox presents.
const kernelInfo = "INFO-kernel"

// runPhase runs one sandbox run with the phase's steps and collects the
// evidence inside and on the host.
func runPhase(ctx context.Context, o Options, e *Env, checks []Check, phase Phase, clock *phaseClock, hooks phaseHooks) (*Evidence, error) {
	if hooks.started != nil {
		// Called here too: a phase that fails before its Start must not
		// hold the short phases back.
		defer hooks.started()
	}
	switch phase {
	case PhaseOutput:
		return runOutputPhase(ctx, o, e)
	case PhaseNetwork:
		return runNetworkPhase(ctx, o, e, checks)
	}
	timeout := 2 * time.Minute
	tag := fmt.Sprintf("phase-%d-%s", phase, e.C.Token)
	// The timeout and browser runs go beside the main run: they must not
	// touch the host-side evidence (snapshots, listener counts) it owns.
	observeHost := phase == PhaseMain || phase == PhaseSecond
	if phase == PhaseTimeout {
		timeout = time.Second
	}
	// The plan names scratch paths, which the started sandbox decides.
	argv := func(e *Env) ([]string, error) {
		var steps []probe.Step
		for _, ch := range checks {
			if ch.Phase == phase && ch.Steps != nil {
				steps = append(steps, ch.Steps(e)...)
			}
		}
		switch phase {
		case PhaseTimeout:
			steps = append(steps, step("spin", "spin_ignore_term", nil))
		case PhaseMain:
			// Not a check: the kernel the sandbox presents, for the report
			// (gVisor's is its own).
			steps = append(steps, step(kernelInfo, "uname", nil))
		}
		return probe.Argv(o.Backend.SelfPath(), tag, probe.Plan{Steps: steps, ExitCode: statusExitCode, StderrMarker: statusMarker})
	}
	var before map[string]string
	var err error
	if observeHost {
		if before, err = e.C.Snapshot(e.Writable); err != nil {
			return nil, err
		}
		e.C.ResetHits()
	}
	stdout := output.NewCapture(4 << 20)
	var stderr bytes.Buffer
	var survivors, inside []int
	var insideErr error
	res, err := runPlan(ctx, o, e, phaseName(phase), clock, tag, hooks, sandbox.Request{
		Timeout: timeout,
		Streams: backends.Streams{Stdout: stdout, Stderr: &syncWriter{w: &stderr}},
		// The probe's JSON must arrive raw, and probe runs are not user runs.
		NoAudit: true, NoGate: true,
	}, argv, func(sess *sandbox.Session) {
		survivors = Survivors(tag)
		if phase == PhaseMain && lookInside(o) {
			inside, insideErr = insideSurvivors(ctx, o, sess, survivorToken(e, false))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("the sandbox did not run: %w", err)
	}
	ev := &Evidence{Result: res.Result, Stderr: stderr.String(), Survivors: survivors, Outputs: res.Outputs,
		InsideSurvivors: inside, InsideScanErr: insideErr}
	if ev.Obs, err = probe.ParseObservations(strings.NewReader(stdout.String())); err != nil && len(ev.Obs) == 0 {
		return ev, err
	}
	if !observeHost {
		return ev, nil
	}
	return ev, observeAfter(e, before, ev)
}

// runPlan runs one command through the one path (Start, Exec, Close),
// with argv built once the sandbox has placed its scratch; in a chain's
// sandbox (hooks.shared) it starts one only when there is none fit for
// it, and leaves the Close to the chain.
// afterExec runs while the sandbox still exists: a command's tree must be
// gone when its Exec returns, not only when the sandbox closes.
func runPlan(ctx context.Context, o Options, e *Env, name string, clock *phaseClock, tag string, hooks phaseHooks, req sandbox.Request, argv func(*Env) ([]string, error), afterExec func(*sandbox.Session)) (sandbox.Outcome, error) {
	ps := hooks.shared
	if ps == nil {
		ps = &phaseSandbox{o: o, e: e, clock: clock, started: hooks.started}
		defer ps.close(ctx)
	}
	sess, err := ps.session(ctx, name, tag, req.Timeout)
	if err != nil {
		return sandbox.Outcome{}, err
	}
	if hooks.first != nil {
		hooks.first(sess)
	}
	phaseEnv := *e
	phaseEnv.Scratch = sess.Sandbox().Scratch()
	if req.Command.Argv, err = argv(&phaseEnv); err != nil {
		ps.fit = false
		return sandbox.Outcome{}, err
	}
	t0 := time.Now()
	out, err := sess.Exec(ctx, req)
	clock.record(name+"/exec", t0)
	afterExec(sess)
	ps.fit = err == nil && endedAsPlanned(out)
	if err != nil {
		err = &endedUnderCommand{err}
	}
	return out, err
}

// phaseSandbox is the sandbox a phase's command runs in: its own, or a
// chain's, which the next phase takes over when the command before ended
// as planned (fit) and otherwise replaces with a fresh one.
type phaseSandbox struct {
	o     Options
	e     *Env
	clock *phaseClock
	// started is called once the first Start returned (whether or not
	// the sandbox started).
	started func()
	sess    *sandbox.Session
	p       *policy.Policy
	name    string
	fit     bool
}

// session is the sandbox for the next command: the one held if it is fit,
// else a fresh one (the unfit one closed first).
func (ps *phaseSandbox) session(ctx context.Context, name, tag string, timeout time.Duration) (*sandbox.Session, error) {
	if ps.sess != nil && ps.fit {
		return ps.sess, nil
	}
	ps.close(ctx)
	p := ps.o.warmPolicy(ps.e.P, tag)
	t0 := time.Now()
	sess, err := sandbox.Start(ctx, ps.o.Backend, p, backends.StartOptions{TTL: backends.TTL(p, timeout)})
	ps.clock.record(name+"/start", t0)
	if ps.started != nil {
		ps.started()
		ps.started = nil
	}
	if err != nil {
		return nil, err
	}
	ps.sess, ps.p, ps.name, ps.fit = sess, p, name, true
	return sess, nil
}

// close closes the held sandbox, if any, and ends its warm session.
func (ps *phaseSandbox) close(ctx context.Context) {
	if ps.sess == nil {
		return
	}
	t0 := time.Now()
	_ = ps.sess.Close(ctx)
	ps.clock.record(ps.name+"/close", t0)
	ps.o.endWarm(ps.p)
	ps.sess = nil
}

// endedAsPlanned: the probe's command exited with the plan's own status
// and nothing else happened to it or to the sandbox (no limit, signal,
// OOM kill, cut output or copy-back trouble), so the sandbox is as fit for
// the next command as a fresh one.
func endedAsPlanned(out sandbox.Outcome) bool {
	r := out.Result
	return r.ExitCode == statusExitCode && r.Signal == 0 && !r.TimedOut && !r.Canceled && !r.OOMKilled &&
		!r.WholeSandboxOOM && r.CopyBackError == "" && !out.OutputCeiling && len(out.Conflicts) == 0
}

// endedUnderCommand is a phase's command that did not end as a command
// does: the sandbox started, and its run broke off under the command.
type endedUnderCommand struct{ err error }

func (e *endedUnderCommand) Error() string { return e.err.Error() }
func (e *endedUnderCommand) Unwrap() error { return e.err }

// lookInside: the main run also looks for survivors from inside its
// sandbox, where the sandbox runs Linux and takes a second command (a
// pooled one runs exactly one).
func lookInside(o Options) bool { return runtime.GOOS == "linux" && o.Warm != "pool" }

// insideSurvivors runs the survivor scan in the main run's sandbox once its
// command ended: the "sleep" helpers with token still alive there. It is
// the only view of them where the sandbox's kernel is its own (gVisor):
// the host's scan cannot see its processes.
func insideSurvivors(ctx context.Context, o Options, sess *sandbox.Session, token string) ([]int, error) {
	// What the sandbox prints is bounded here and parsed strictly.
	out, errOut := output.NewCapture(64<<10), output.NewCapture(4<<10)
	res, err := sess.Exec(ctx, sandbox.Request{
		Timeout: 30 * time.Second, NoAudit: true, NoGate: true,
		Command: backends.Command{Argv: []string{o.Backend.SelfPath(), probe.ChildSubcommand, "survivors", token}},
		Streams: backends.Streams{Stdout: out, Stderr: errOut},
	})
	if err != nil {
		return nil, err
	}
	if res.Result.ExitCode != 0 {
		return nil, fmt.Errorf("the scan exited %d: %s", res.Result.ExitCode, strings.TrimSpace(errOut.String()))
	}
	var pids []int
	for _, line := range strings.Fields(out.String()) {
		pid, err := strconv.Atoi(line)
		if err != nil {
			return nil, fmt.Errorf("the scan printed %q", line)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// runOutputPhase floods hostile output through the same pipeline `run`
// uses, with the flood's secret among those to redact, in a sandbox of its
// own.
func runOutputPhase(ctx context.Context, o Options, e *Env) (*Evidence, error) {
	outP := o.warmPolicy(e.P, "output-"+e.C.Token)
	defer o.endWarm(outP)
	return outputExec(ctx, o, e, func(ctx context.Context, req sandbox.Request) (sandbox.Outcome, error) {
		req.Policy = outP
		return sandbox.Run(ctx, o.Backend, req)
	})
}

// outputExec runs the flood with exec: a sandbox of its own (sandbox.Run)
// or a started one's (Session.Exec); either way the output goes through
// the pipeline `run` uses.
func outputExec(ctx context.Context, o Options, e *Env, exec func(context.Context, sandbox.Request) (sandbox.Outcome, error)) (*Evidence, error) {
	var shown bytes.Buffer
	res, err := exec(ctx, sandbox.Request{
		Timeout: time.Minute, NoAudit: true, NoGate: true,
		Command:  backends.Command{Argv: []string{o.Backend.SelfPath(), probe.ChildSubcommand, "flood", strconv.Itoa(floodBytes), floodSecret(e.C)}},
		Streams:  backends.Streams{Stdout: &shown},
		Redactor: output.NewRedactor([]output.Secret{{Name: "SELFTEST_SECRET", Value: floodSecret(e.C)}}, output.DefaultRules()),
	})
	if err != nil {
		return nil, fmt.Errorf("the sandbox did not run: %w", err)
	}
	return &Evidence{Result: res.Result, Shown: shown.String(), OutStats: res.Stdout}, nil
}

// syncWriter serialises writes from the stdout and stderr copiers.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func phaseName(p Phase) string {
	switch p {
	case PhaseMain:
		return "main"
	case PhaseSecond:
		return "second"
	case PhaseTimeout:
		return "timeout"
	case PhaseBrowser:
		return "browser"
	case PhaseOutput:
		return "output"
	case PhaseMemory:
		return "memory"
	case PhaseProcesses:
		return "processes"
	case PhaseFill:
		return "fill"
	case PhaseNetwork:
		return "network"
	}
	return fmt.Sprintf("phase-%d", p)
}
