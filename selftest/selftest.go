// Package selftest tries what a hostile reproducer would, through the very
// same Policy -> Render -> Run path as real commands, and checks that each
// attempt is blocked while ordinary work still succeeds. Every hostile probe
// has a canary and a control run outside the sandbox: a check whose control
// cannot see its canary is inconclusive, never ok.
package selftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/probe"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// Status of one check.
const (
	StatusOK           = "ok"
	StatusFail         = "FAIL"
	StatusInconclusive = "INCONCLUSIVE"
	// StatusNotApplicable: the backend does not enforce what the check
	// needs (a weaker mode the config accepted); never counted as ok.
	StatusNotApplicable = "n/a"
)

// Options configure a selftest.
type Options struct {
	Config  *config.File
	Roles   []profiles.Role
	Backend backends.Backend
	// SelfHost is the static triage-sandbox binary on the host: it runs the
	// controls and the sentinel.
	SelfHost string
	// BaseEnv is the ordinary (non-secret) environment the canaries are added
	// to; nil means PATH, LANG and TERM from this process.
	BaseEnv []string
	// CanaryBase is where canary directories go ("" = /var/tmp).
	CanaryBase string
	// Mutate and AfterPlant let tests weaken a policy or break a canary to
	// prove that checks fail.
	Mutate     func(*policy.Policy)
	AfterPlant func(*Canaries)
	// Warm runs every phase through a warm sandbox: "session" (each phase
	// its own agent session, ended afterwards) or "pool" (each phase a
	// pooled sandbox); "" starts each cold. Backend must then be a
	// warm.Backend.
	Warm string
	// EndWarm ends the session or pool a policy used (warm.End).
	EndWarm func(*policy.Policy)
}

// warmPolicy is p as a phase runs it in the chosen warm mode.
func (o Options) warmPolicy(p *policy.Policy, tag string) *policy.Policy {
	if o.Warm == "" {
		return p
	}
	cp := *p
	switch o.Warm {
	case "session":
		cp.Warm = policy.Warm{Session: "selftest-" + tag, Idle: time.Minute}
	case "pool":
		cp.Warm = policy.Warm{Pool: 2, Idle: time.Minute}
	}
	return &cp
}

// endWarm ends what warmPolicy's policy started (a session; a pool is
// ended once the role is done).
func (o Options) endWarm(p *policy.Policy) {
	if o.Warm == "session" && o.EndWarm != nil {
		o.EndWarm(p)
	}
}

// Result is one check's outcome.
type Result struct {
	ID       string      `json:"id"`
	Name     string      `json:"name"`
	Category string      `json:"category"`
	Expected Expectation `json:"expected"`
	Observed string      `json:"observed"`
	Status   string      `json:"status"`
	OK       bool        `json:"ok"`
	Evidence string      `json:"evidence"`
	Control  string      `json:"control,omitempty"`
	Fix      string      `json:"fix,omitempty"`
}

// RoleReport is one role's block of the report.
type RoleReport struct {
	Role       profiles.Role `json:"role"`
	Backend    string        `json:"backend"`
	PolicyHash string        `json:"policy_hash"`
	// ProductionHash is the hash of the same config compiled for the real
	// workspace and caller: the selftest's own policy differs only in
	// paths (the canary home, workspace and checkout) and environment.
	ProductionHash string            `json:"production_policy_hash,omitempty"`
	Network        string            `json:"network"`
	Versions       map[string]string `json:"versions"`
	Results        []Result          `json:"checks"`
	// Weakened are requirements the backend does not enforce and the
	// config accepted ([sandbox] accept_weaker).
	Weakened []policy.Capability `json:"weakened,omitempty"`
	Error    string              `json:"error,omitempty"`
	Duration time.Duration       `json:"duration_ns"`
	// Phases is how long each part took (controls, main, second, timeout,
	// browser, output), to see where the time goes.
	Phases map[string]time.Duration `json:"phase_durations_ns,omitempty"`
	// Slowest are the probe steps that took longest inside the sandbox.
	Slowest []string `json:"slowest_steps,omitempty"`
}

// Counts tallies statuses.
func (r *RoleReport) Counts() (ok, failed, inconclusive int) {
	for _, res := range r.Results {
		switch res.Status {
		case StatusOK:
			ok++
		case StatusFail:
			failed++
		case StatusNotApplicable:
		default:
			inconclusive++
		}
	}
	return
}

// NotApplicable counts the checks the backend could not run.
func (r *RoleReport) NotApplicable() int {
	n := 0
	for _, res := range r.Results {
		if res.Status == StatusNotApplicable {
			n++
		}
	}
	return n
}

// Report is the whole selftest.
type Report struct {
	Backend  string        `json:"backend"`
	Roles    []*RoleReport `json:"roles"`
	Duration time.Duration `json:"duration_ns"`
}

// Passed is true when every check of every role is ok.
func (r *Report) Passed() bool {
	for _, rr := range r.Roles {
		if rr.Error != "" || len(rr.Results) == 0 {
			return false
		}
		if _, f, i := rr.Counts(); f+i > 0 {
			return false
		}
	}
	return true
}

// Run runs the selftest for every role concurrently.
func Run(ctx context.Context, o Options) *Report {
	start := time.Now()
	rep := &Report{Backend: o.Backend.Name(), Roles: make([]*RoleReport, len(o.Roles))}
	var wg sync.WaitGroup
	for i, role := range o.Roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Roles[i] = runRole(ctx, o, role)
		}()
	}
	wg.Wait()
	rep.Duration = time.Since(start)
	return rep
}

func runRole(ctx context.Context, o Options, role profiles.Role) *RoleReport {
	start := time.Now()
	rr := &RoleReport{Role: role, Backend: o.Backend.Name()}
	defer func() { rr.Duration = time.Since(start) }()
	fail := func(err error) *RoleReport {
		rr.Error = err.Error()
		return rr
	}
	c, err := Plant(o.CanaryBase, o.SelfHost)
	if err != nil {
		return fail(err)
	}
	defer c.Close()
	if o.AfterPlant != nil {
		o.AfterPlant(c)
	}
	p, outputs, err := buildPolicy(o, c, role)
	if err != nil {
		return fail(err)
	}
	rr.PolicyHash = p.Hash()
	if host, err := policy.CurrentHost(); err == nil {
		if prod, err := policy.Build(o.Config, role, host, policy.Options{Backend: o.Backend.Name(), Capabilities: o.Backend.Capabilities()}); err == nil {
			rr.ProductionHash = prod.Hash()
		}
	}
	rr.Network = "network off (localhost only)"
	if !p.Network.LoopbackOnly() {
		rr.Network = "NETWORK ON"
	}
	rr.Versions = o.Backend.Describe(ctx, p)
	rr.Versions["kernel_host"] = kernelRelease()
	rr.Versions["go"] = runtime.Version()
	if o.Warm != "" {
		rr.Versions["warm"] = o.Warm
	}

	checks, notApplicable := applicable(Catalogue(), role, o.Backend)
	rr.Weakened, _ = policy.Enforce(p, o.Backend.Name(), o.Backend.Capabilities())
	if p.AllowAll {
		for _, ch := range checks {
			rr.Results = append(rr.Results, Result{ID: ch.ID, Name: ch.Name, Category: ch.Category, Expected: ch.Expect,
				Observed: "unconfined", Status: StatusFail, Evidence: "allow_all = true: no isolation at all",
				Fix: "remove allow_all from [sandbox]: the gate never passes an unconfined sandbox"})
		}
		return rr
	}
	if err := policy.Prepare(p); err != nil {
		return fail(err)
	}
	e := &Env{C: c, P: p, Outputs: outputs}
	var phaseMu sync.Mutex
	rr.Phases = map[string]time.Duration{}
	timed := func(name string, since time.Time) {
		phaseMu.Lock()
		rr.Phases[name] = time.Since(since)
		phaseMu.Unlock()
	}
	t0 := time.Now()
	controls, controlEv := runControls(ctx, o, e, checks)
	timed("controls", t0)
	if err := c.Replant(); err != nil {
		return fail(fmt.Errorf("restoring canaries after the control run: %w", err))
	}
	cleanWritable(p)

	type phaseResult struct {
		ev  *Evidence
		err error
	}
	results := map[Phase]phaseResult{}
	// The timeout and browser runs do not touch host-side evidence, so they
	// run beside the main one.
	var mu sync.Mutex
	var side sync.WaitGroup
	for _, ph := range []Phase{PhaseTimeout, PhaseBrowser, PhaseOutput, PhaseMemory, PhaseProcesses, PhaseFill} {
		if !hasPhase(checks, ph) {
			continue
		}
		side.Add(1)
		go func() {
			defer side.Done()
			defer timed(phaseName(ph), time.Now())
			ev, err := runPhase(ctx, o, e, checks, ph)
			mu.Lock()
			results[ph] = phaseResult{ev, err}
			mu.Unlock()
		}()
	}
	t0 = time.Now()
	mainEv, mainErr := runPhase(ctx, o, e, checks, PhaseMain)
	timed("main", t0)
	t0 = time.Now()
	secondEv, secondErr := runPhase(ctx, o, e, checks, PhaseSecond)
	timed("second", t0)
	side.Wait()
	if o.Warm == "pool" && o.EndWarm != nil {
		o.EndWarm(o.warmPolicy(e.P, "")) // the role's pool: nothing is left
	}
	results[PhaseMain] = phaseResult{mainEv, mainErr}
	if mainEv != nil && mainEv.Obs[kernelInfo].OK {
		rr.Versions["kernel_in_sandbox"] = mainEv.Obs[kernelInfo].Detail
	}
	results[PhaseSecond] = phaseResult{secondEv, secondErr}
	for _, ch := range checks {
		r := results[ch.Phase]
		rr.Results = append(rr.Results, judge(e, ch, r.ev, r.err, controls[ch.ID]))
	}
	var evs []*Evidence
	for _, r := range results {
		evs = append(evs, r.ev)
	}
	rr.Slowest = slowestSteps(evs, 5)
	if controlEv != nil {
		for _, step := range slowestSteps([]*Evidence{controlEv}, 3) {
			rr.Slowest = append(rr.Slowest, "control "+step)
		}
	}
	rr.Results = append(rr.Results, notApplicable...)
	rr.Results = append(rr.Results, guardResults(ctx, p)...)
	return rr
}

// buildPolicy compiles the user's config for role, rooted in the canary
// workspace and checkout, against the canary home and environment. It also
// returns the configured outputs (writable paths) before any test mutation:
// host-side change detection skips those and nothing else.
func buildPolicy(o Options, c *Canaries, role profiles.Role) (*policy.Policy, []string, error) {
	cfg := *o.Config
	cfg.Root = c.Root
	cfg.Project.Checkout = c.Checkout
	cfg.Project.Python = ""
	// The canary workspace is a configured one, with the user's config (as
	// config discovery will find it above a reproducer's directory).
	planted, err := plantWorkspaceConfig(o.Config, c.Root)
	if err != nil {
		return nil, nil, err
	}
	cfg.Path = planted
	env := o.BaseEnv
	if env == nil {
		for _, k := range []string{"PATH", "LANG", "TERM"} {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	env = append([]string(nil), env...)
	for k, v := range c.Env {
		env = append(env, k+"="+v)
	}
	host := policy.Host{Home: c.Home, Env: env, OS: runtime.GOOS, UID: os.Getuid(), GID: os.Getgid(), Cwd: c.Root}
	p, err := policy.Build(&cfg, role, host, policy.Options{Backend: o.Backend.Name(), Capabilities: o.Backend.Capabilities()})
	if err != nil {
		return nil, nil, err
	}
	outputs := p.Writable()
	if o.Mutate != nil {
		o.Mutate(p)
	}
	return p, outputs, nil
}

func plantWorkspaceConfig(cfg *config.File, root string) (string, error) {
	var body []byte
	if cfg.Path != "" {
		b, err := os.ReadFile(cfg.Path)
		if err != nil {
			return "", fmt.Errorf("reading %s for the canary workspace: %w", cfg.Path, err)
		}
		body = b
	}
	path := filepath.Join(root, config.FileName)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return "", fmt.Errorf("writing the canary workspace's config: %w", err)
	}
	return path, nil
}

func hasPhase(checks []Check, ph Phase) bool {
	for _, ch := range checks {
		if ch.Phase == ph {
			return true
		}
	}
	return false
}

// applicable splits the role's checks into those to run and those the
// backend cannot run, each reported not applicable with the reason.
func applicable(all []Check, role profiles.Role, b backends.Backend) ([]Check, []Result) {
	var run []Check
	var na []Result
	caps := b.Capabilities()
	for _, ch := range all {
		if ch.Roles != nil && !slices.Contains(ch.Roles, role) {
			continue
		}
		var why []string
		for _, r := range ch.Requires {
			if !slices.Contains(caps, r) {
				why = append(why, fmt.Sprintf("the %s backend does not enforce %s (%s)", b.Name(), r, profiles.CapabilityMeaning(r)))
			}
		}
		if len(why) == 0 {
			run = append(run, ch)
			continue
		}
		na = append(na, Result{ID: ch.ID, Name: ch.Name, Category: ch.Category, Expected: ch.Expect,
			Observed: "not applicable", Status: StatusNotApplicable, Evidence: strings.Join(why, "; ")})
	}
	return run, na
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
func runPhase(ctx context.Context, o Options, e *Env, checks []Check, phase Phase) (*Evidence, error) {
	if phase == PhaseOutput {
		return runOutputPhase(ctx, o, e)
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
		enc, err := probe.Plan{Steps: steps, ExitCode: statusExitCode, StderrMarker: statusMarker}.Encode()
		return []string{o.Backend.SelfPath(), probe.Subcommand, "--tag", tag, "--plan", enc}, err
	}
	var before map[string]string
	var err error
	if observeHost {
		if before, err = e.C.Snapshot(e.Outputs); err != nil {
			return nil, err
		}
		e.C.ResetHits()
	}
	stdout := output.NewCapture(4 << 20)
	var stderr bytes.Buffer
	var survivors []int
	res, err := runPlan(ctx, o, e, tag, sandbox.Request{
		Timeout: timeout,
		Streams: backends.Streams{Stdout: stdout, Stderr: &syncWriter{w: &stderr}},
		// The probe's JSON must arrive raw, and probe runs are not user runs.
		NoAudit: true, NoGate: true,
	}, argv, func() { survivors = Survivors(tag) })
	if err != nil {
		return nil, fmt.Errorf("the sandbox did not run: %w", err)
	}
	ev := &Evidence{Result: res.Result, Stderr: stderr.String(), Survivors: survivors, Outputs: res.Outputs}
	if ev.Obs, err = probe.ParseObservations(strings.NewReader(stdout.String())); err != nil && len(ev.Obs) == 0 {
		return ev, err
	}
	if !observeHost {
		return ev, nil
	}
	ev.Survivors = append(ev.Survivors, Survivors("survivor-"+e.C.Token)...)
	KillByToken("survivor-" + e.C.Token)
	ev.LoopbackHits, ev.RemoteHits = e.C.Loopback.Hits(), e.C.RemoteHits()
	after, err := e.C.Snapshot(e.Outputs)
	if err != nil {
		return ev, err
	}
	ev.Changed = Changed(before, after)
	return ev, nil
}

// runPlan runs one command through the one path (Start, Exec, Close),
// with argv built once the sandbox has placed its scratch.
// afterExec runs while the sandbox still exists: a command's tree must be
// gone when its Exec returns, not only when the sandbox closes.
func runPlan(ctx context.Context, o Options, e *Env, tag string, req sandbox.Request, argv func(*Env) ([]string, error), afterExec func()) (sandbox.Outcome, error) {
	timeout := req.Timeout
	p := o.warmPolicy(e.P, tag)
	sess, err := sandbox.Start(ctx, o.Backend, p, backends.StartOptions{TTL: backends.TTL(p, timeout)})
	if err != nil {
		return sandbox.Outcome{}, err
	}
	defer o.endWarm(p)
	defer func() { _ = sess.Close(ctx) }()
	phaseEnv := *e
	phaseEnv.Scratch = sess.Sandbox().Scratch()
	if req.Command.Argv, err = argv(&phaseEnv); err != nil {
		return sandbox.Outcome{}, err
	}
	out, err := sess.Exec(ctx, req)
	afterExec()
	return out, err
}

// runOutputPhase floods hostile output through the same pipeline `run`
// uses, with the flood's secret among those to redact.
func runOutputPhase(ctx context.Context, o Options, e *Env) (*Evidence, error) {
	var shown bytes.Buffer
	outP := o.warmPolicy(e.P, "output-"+e.C.Token)
	defer o.endWarm(outP)
	res, err := sandbox.Run(ctx, o.Backend, sandbox.Request{
		Policy: outP, Timeout: time.Minute, NoAudit: true, NoGate: true,
		Command:  backends.Command{Argv: []string{o.Backend.SelfPath(), probe.ChildSubcommand, "flood", strconv.Itoa(floodBytes), floodSecret(e.C)}},
		Streams:  backends.Streams{Stdout: &shown},
		Redactor: output.NewRedactor([]output.Secret{{Name: "SELFTEST_SECRET", Value: floodSecret(e.C)}}, output.DefaultRules()),
	})
	if err != nil {
		return nil, fmt.Errorf("the sandbox did not run: %w", err)
	}
	return &Evidence{Result: res.Result, Shown: shown.String(), OutStats: res.Stdout}, nil
}

// outputControl runs the flood on the host with nothing in between: the
// raw output has every escape, command and secret the checks look for.
func outputControl(ctx context.Context, o Options, e *Env) *Evidence {
	cmd := exec.CommandContext(ctx, o.SelfHost, probe.ChildSubcommand, "flood", strconv.Itoa(floodBytes), floodSecret(e.C))
	raw, err := cmd.Output()
	if err != nil {
		return &Evidence{Host: true}
	}
	return &Evidence{Host: true, Shown: string(raw), OutStats: output.Stats{BytesIn: int64(len(raw))}}
}

// judge turns evidence into a result.
func judge(e *Env, ch Check, ev *Evidence, runErr error, control *controlResult) Result {
	r := Result{ID: ch.ID, Name: ch.Name, Category: ch.Category, Expected: ch.Expect, Fix: ch.Fix}
	if runErr != nil || ev == nil {
		r.Status, r.Observed = StatusInconclusive, "not run"
		if runErr != nil {
			r.Evidence = runErr.Error()
		}
		return r
	}
	if ch.Steps != nil && !(ch.SandboxOOMBlocks && ev.Result.WholeSandboxOOM) {
		for _, s := range ch.Steps(e) {
			o, ok := ev.Obs[s.ID]
			if !ok {
				r.Status, r.Observed = StatusInconclusive, "no observation"
				r.Evidence = fmt.Sprintf("the probe reported nothing for %s (exit %d)", s.ID, ev.Result.ExitCode)
				return r
			}
			// Only a check missing its Requires gets here: never ok.
			if o.Unsupported() {
				r.Status, r.Observed = StatusInconclusive, "not run"
				r.Evidence = o.Detail + ": the check must require a capability this OS's backends lack"
				return r
			}
		}
	}
	if ch.Inconclusive != nil {
		if inc, why := ch.Inconclusive(e, ev); inc {
			r.Status, r.Observed, r.Evidence = StatusInconclusive, "not decided", why
			return r
		}
	}
	if control != nil && control.notHere != "" {
		r.Status, r.Observed, r.Evidence = StatusNotApplicable, "not applicable", control.notHere
		return r
	}
	succeeded, evidence := ch.Judge(e, ev)
	r.Evidence = evidence
	if ch.Expect == Allowed {
		r.Observed = map[bool]string{true: "allowed", false: "blocked"}[succeeded]
		r.OK = succeeded
		r.Status = map[bool]string{true: StatusOK, false: StatusFail}[succeeded]
		return r
	}
	r.Observed = map[bool]string{true: "allowed", false: "blocked"}[succeeded]
	if control != nil {
		r.Control = control.summary
	}
	switch {
	case succeeded:
		r.Status = StatusFail
	case control == nil || !control.saw:
		r.Status = StatusInconclusive
		r.Evidence += "; the control outside the sandbox could not do it either, so this check proves nothing"
	default:
		r.Status, r.OK = StatusOK, true
	}
	return r
}

type controlResult struct {
	saw     bool
	summary string
	// notHere: the host has nothing to reach; the check is not applicable.
	notHere string
}

// runControls runs every hostile check outside the sandbox against the same
// canaries. A check whose control does not succeed is inconclusive.
func runControls(ctx context.Context, o Options, e *Env, checks []Check) (map[string]*controlResult, *Evidence) {
	out := map[string]*controlResult{}
	var steps []probe.Step
	for _, ch := range checks {
		if ch.HasControl() && sideOrMain(ch.Phase) && ch.Steps != nil {
			steps = append(steps, ch.Steps(e)...)
		}
	}
	before, err := e.C.Snapshot(e.Outputs)
	e.C.ResetHits()
	ev := &Evidence{Host: true}
	if err == nil {
		ev.Obs, err = runHostPlan(ctx, o.SelfHost, e, probe.Plan{Steps: steps})
	}
	if err == nil {
		ev.Survivors = Survivors("survivor-" + e.C.Token)
		ev.LoopbackHits, ev.RemoteHits = e.C.Loopback.Hits(), e.C.RemoteHits()
		var after map[string]string
		if after, err = e.C.Snapshot(e.Outputs); err == nil {
			ev.Changed = Changed(before, after)
		}
	}
	KillByToken("survivor-" + e.C.Token)
	var outEv *Evidence
	for _, ch := range checks {
		if !ch.HasControl() {
			continue
		}
		if err != nil {
			out[ch.ID] = &controlResult{summary: "control did not run: " + err.Error()}
			continue
		}
		cev := ev
		switch ch.Phase {
		case PhaseMain, PhaseMemory, PhaseProcesses, PhaseFill: // in ev
		case PhaseOutput:
			if outEv == nil {
				outEv = outputControl(ctx, o, e)
			}
			cev = outEv
		default:
			cev = secondPhaseControl(ctx, o, e, ch)
		}
		if ch.HostLacks != nil {
			if lacks, why := ch.HostLacks(cev); lacks {
				out[ch.ID] = &controlResult{notHere: why}
				continue
			}
		}
		saw, detail := ch.Judge(e, cev)
		out[ch.ID] = &controlResult{saw: saw, summary: detail}
	}
	return out, ev
}

// sideOrMain: the phase's hostile steps run in the host control as they
// are (the second, timeout, browser and output phases have controls of
// their own).
func sideOrMain(p Phase) bool {
	return p == PhaseMain || p == PhaseMemory || p == PhaseProcesses || p == PhaseFill
}

// secondPhaseControl performs the host side of the second-run checks.
func secondPhaseControl(ctx context.Context, o Options, e *Env, ch Check) *Evidence {
	ev := &Evidence{Host: true}
	switch ch.ID {
	case "WR-11":
		// On the host, a file written by one run is there for the next.
		dir := e.C.Dir + "/host-scratch"
		_ = os.MkdirAll(dir, 0o700)
		p := dir + "/.selftest-persist"
		_ = os.WriteFile(p, []byte("x"), 0o600)
		obs, err := runHostPlan(ctx, o.SelfHost, e, probe.Plan{Steps: one(step("WR-11", "exists", map[string]string{"path": p}))})
		if err == nil {
			ev.Obs = obs
		}
	case "PROC-03":
		// The spinning probe survives SIGTERM on the host.
		tag := "control-spin-" + e.C.Token
		enc, _ := probe.Plan{Steps: one(step("spin", "spin_ignore_term", nil))}.Encode()
		cmd := exec.Command(o.SelfHost, probe.Subcommand, "--tag", tag, "--plan", enc)
		if cmd.Start() == nil {
			time.Sleep(300 * time.Millisecond)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			time.Sleep(300 * time.Millisecond)
			ev.Survivors = Survivors(tag)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	return ev
}

// runHostPlan runs the probe unsandboxed with the canary environment.
func runHostPlan(ctx context.Context, self string, e *Env, plan probe.Plan) (map[string]probe.Observation, error) {
	enc, err := plan.Encode()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, probe.Subcommand, "--tag", "control-"+e.C.Token, "--plan", enc)
	cmd.Dir = e.C.Root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.C.Home}
	for k, v := range e.C.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A terminal of its own (never ours) as controlling tty, so the TIOCSTI
	// control has a terminal to inject into. Without one, a session of its
	// own and no terminal at all: the control must never type into ours.
	if tty, err := newControllingTTY(cmd); err == nil {
		defer tty.Close()
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	runErr := cmd.Run()
	obs, err := probe.ParseObservations(&stdout)
	if err != nil {
		return nil, err
	}
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		return nil, fmt.Errorf("control probe: %w: %s", runErr, stderr.String())
	}
	return obs, nil
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return strings.TrimSpace(string(b))
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

// slowestSteps names the n probe steps that took longest, with their time.
func slowestSteps(evs []*Evidence, n int) []string {
	type timed struct {
		id string
		ms int64
	}
	var all []timed
	for _, ev := range evs {
		if ev != nil {
			for id, o := range ev.Obs {
				all = append(all, timed{id, o.Ms})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ms > all[j].ms })
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, fmt.Sprintf("%s %dms", all[i].id, all[i].ms))
	}
	return out
}

func phaseName(p Phase) string {
	switch p {
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
	}
	return fmt.Sprintf("phase-%d", p)
}
