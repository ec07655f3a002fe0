// Package sandbox is the one path every command takes: load the config,
// build the role's policy, prepare the writable paths, pick the backend and
// run under a deadline. The CLI, the selftest and library users all call it.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/insidebin"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"

	"github.com/triage-sandbox/triage-sandbox/audit"
	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/hints"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/hostprep"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/runproxy"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Compile loads the config and builds the role's policy for the backend it
// names, with that backend's capabilities (a backend the registry does not
// have is refused when it is made).
func Compile(reg *backends.Registry, configFlag string, role profiles.Role, host policy.Host, opts policy.Options) (*policy.Policy, error) {
	cfg, err := LoadConfigReading(host.Reads, configFlag, host.Cwd, reg.Names())
	if err != nil {
		return nil, err
	}
	return Build(reg, cfg, role, host, opts)
}

// Build builds the role's policy with the capabilities of the backend the
// config and options choose.
func Build(reg *backends.Registry, cfg *config.File, role profiles.Role, host policy.Host, opts policy.Options) (*policy.Policy, error) {
	name := policy.ChooseBackend(cfg, role, host, opts)
	if caps, ok := reg.Capabilities(name); ok {
		opts.Capabilities = caps
	}
	return policy.Build(cfg, role, host, opts)
}

// Request is one command to run.
type Request struct {
	Policy *policy.Policy
	// Timeout overrides the policy's role timeout when > 0.
	Timeout time.Duration
	Command backends.Command
	// Streams receive the output. With Redactor set they receive it
	// cleaned: redacted, neutralised (unless Raw) and bounded by the
	// policy's output limits; without, raw (the selftest's probe protocol).
	Streams  backends.Streams
	Redactor *output.Redactor
	Raw      bool
	// NoAudit skips the audit record (the selftest's own probe runs).
	NoAudit bool
	// Task is what the agent is working on, for the guard.
	Task string
	// Confirm asks the operator about a command a confirm rule matched;
	// nil denies such commands.
	Confirm ConfirmFunc
	// NoGate skips the gate: the selftest's own probe, which is not a
	// command anybody asked for.
	NoGate bool
	// Gatekeeper, when set, is Policy's gate already compiled (a
	// keeper's kept compile); else Run compiles it.
	Gatekeeper *Gatekeeper
	// PolicyHash, when set, is Policy.Hash() already computed (a
	// keeper's kept compile's); else the audit record computes it.
	// WarmHash alike is Policy.WarmHash() (backends.StartOptions).
	PolicyHash, WarmHash string
	// Started, when set, is called once the sandbox is up, before the
	// command runs: the CLI prints the policy's warnings then, so a run
	// refused before that prints only its refusal.
	Started func()
}

// Outcome is a run's result plus what happened to its output.
type Outcome struct {
	backends.Result
	Stdout, Stderr output.Stats
	// OutputCeiling: the command printed past the ceiling and was stopped.
	OutputCeiling bool
	// Weakened are the policy's requirements this backend does not enforce
	// and the config accepted: every report shows them.
	Weakened []policy.Capability
	// Warnings are for the caller to show (an audit record or a removal
	// that failed); library code never prints them.
	Warnings []string
	// Hints say which sandbox restriction a failed command's output points
	// to (a read-only path, no network, a tool the image lacks); none when
	// nothing does.
	Hints []string
	// Outputs is what the command left in the writable paths that a host
	// reader must know about, and what was done about it.
	Outputs hostfs.Inspection
	// Gate is the gate's verdict on the command.
	Gate GateVerdict
	// Conflicts are writable files the host changed while the command ran:
	// the host's version stays, the sandbox's is kept beside it (KeptAs).
	Conflicts []stage.Change
	// Network are the network proxy's decisions on the command's
	// connections (a network allow-list): host, port, allowed or why not,
	// bytes. The names are the sandbox's, neutralised.
	Network []egress.Decision
}

// ErrOutputCeiling is the cause when a run is stopped for printing too much.
var ErrOutputCeiling = errors.New("output ceiling reached")

// Session is a started sandbox whose commands all take the one path:
// output pipeline, exit mapping and audit record.
type Session struct {
	backend  backends.Backend
	policy   *policy.Policy
	sandbox  backends.Sandbox
	weakened []policy.Capability
	gate     *Gatekeeper
	// ran: a command was started in this sandbox (see scriptView).
	ran atomic.Bool
	// swept is closed once the sweep this start began has ended.
	swept <-chan struct{}
	// egress is the run's network proxy (nil without an allow-list, and
	// for a keeper's sandbox: its keeper serves the allow-list).
	egress *runproxy.Proxy
}

// sweepWait bounds how long Close waits for the start's sweep.
const sweepWait = 10 * time.Second

// sweep removes what dead owners left on backend (their sandboxes,
// bundles, mounts, namespaces, records), beside a start, so nothing of
// ours outlives its owner for longer than until the next start.
func sweep(ctx context.Context, backend backends.Backend) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = backend.Sweep(context.WithoutCancel(ctx))
		runproxy.Sweep(runproxy.Base(), time.Now())
	}()
	return done
}

// Start checks that backend can enforce p (or that the config accepted the
// weaker mode), prepares the writable paths and starts a sandbox.
func Start(ctx context.Context, backend backends.Backend, p *policy.Policy, opts backends.StartOptions) (*Session, error) {
	if p == nil {
		return nil, errors.New("no policy")
	}
	gk, err := NewGatekeeper(p)
	if err != nil {
		return nil, err
	}
	return start(ctx, backend, p, opts, gk)
}

// start is Start with the policy's gate already compiled (Run judged the
// first command with it before any sandbox existed).
func start(ctx context.Context, backend backends.Backend, p *policy.Policy, opts backends.StartOptions, gk *Gatekeeper) (*Session, error) {
	endPrepare := phase.Begin(ctx, "start.prepare")
	weakened, err := policy.Enforce(p, backend.Name(), backend.Capabilities())
	if err == nil {
		err = hostprep.Writable(p)
	}
	endPrepare()
	if err != nil {
		return nil, err
	}
	// A start that attaches to a keeper's sandbox starts nothing here: the
	// keeper sweeps beside its own starts, off the command's path.
	var swept <-chan struct{}
	a, ok := backend.(backends.Attacher)
	attaches := ok && a.Attaches(p)
	if !attaches {
		swept = sweep(ctx, backend)
	}
	// The proxy before the sandbox: the holder refuses to start without
	// its socket. A keeper's sandbox has its proxy in the keeper, which
	// holds the sandbox: a proxy here would end with this run.
	bp, px := p, (*runproxy.Proxy)(nil)
	if !attaches {
		bp, px, err = runproxy.Start(ctx, p, backend.Capabilities())
	}
	if err == nil {
		var sb backends.Sandbox
		if sb, err = backend.Start(ctx, bp, opts); err == nil {
			return &Session{backend: backend, policy: p, sandbox: sb, weakened: weakened, gate: gk, swept: swept, egress: px}, nil
		}
		_ = px.Close()
	}
	if swept != nil {
		awaitSweep(swept)
	}
	return nil, err
}

// decisions are the network proxy's decisions on the last command's
// connections: this run's proxy's, or those its keeper reported.
func (s *Session) decisions() []egress.Decision {
	if s.egress != nil {
		return s.egress.Decisions()
	}
	if r, ok := s.sandbox.(decisionReporter); ok {
		return r.NetworkDecisions()
	}
	return nil
}

// Sandbox is the started sandbox (its id and scratch).
func (s *Session) Sandbox() backends.Sandbox { return s.sandbox }

// Close ends the sandbox and returns once it is gone.
// It also waits (a bounded time) for the sweep its start began, so a
// one-shot run finishes what it started.
func (s *Session) Close(ctx context.Context) error {
	err := s.sandbox.Close(ctx)
	// After the sandbox: nothing is left to connect through it.
	if perr := s.egress.Close(); perr != nil && err == nil {
		err = fmt.Errorf("closing the network proxy: %w", perr)
	}
	if s.swept != nil {
		awaitSweep(s.swept)
	}
	return err
}

// awaitSweep waits for a start's sweep, bounded: a daemon that stopped
// answering must not hold the caller (the next start sweeps again).
func awaitSweep(swept <-chan struct{}) {
	select {
	case <-swept:
	case <-time.After(sweepWait):
	}
}

// Exec runs one command in the session. It returns an error only when the
// command could not be run at all (exit 125). Every command, refused or
// not, is recorded in the policy's audit log.
func (s *Session) Exec(ctx context.Context, req Request) (out Outcome, err error) {
	return s.exec(ctx, req, nil)
}

// exec runs one command; judged is the gate's verdict when Run already
// asked (before any sandbox existed).
func (s *Session) exec(ctx context.Context, req Request, judged *GateVerdict) (out Outcome, err error) {
	req.Policy = s.policy
	out.Weakened = s.weakened
	if !req.NoAudit {
		defer func() {
			defer phase.Begin(ctx, "exec.audit")()
			err = s.audit(req, &out, err)
		}()
	}
	if err := backends.CheckArgv(req.Command.Argv); err != nil {
		return out, err
	}
	if sec := s.egress.Secret(); sec != "" && req.Redactor != nil {
		// The command holds the host proxy's password (its proxy
		// variables); what it prints of it is shown redacted, as the
		// audit record then is.
		req.Redactor = req.Redactor.With(output.Secret{Name: "egress-proxy-secret", Value: sec})
	}
	if s.policy.Network.Mode == policy.NetworkProxy {
		// Before the audit record (deferred earlier, so run later) and
		// after the neutraliser: these hints are neutralised here.
		defer func() {
			out.Network = neutraliseDecisions(s.decisions())
			out.Hints = append(out.Hints, egressHints(s.policy, out.Network)...)
		}()
	}
	switch {
	case judged != nil:
		out.Gate = *judged
	case !req.NoGate:
		v, warns, err := s.gate.judge(ctx, req.Command.Argv, req.Task, req.Confirm, req.Redactor, s.gate.kept(s.ran.Load()))
		out.Gate, out.Warnings = v, append(out.Warnings, warns...)
		if err != nil {
			return out, err
		}
	}
	// From here the sandbox may keep what the command writes: a later
	// command's scripts there are not the host's to judge.
	s.ran.Store(true)
	req.Command.Timeout = s.policy.Timeout()
	if req.Command.Workdir == "" {
		// The command's own directory: a session's sandbox may have been
		// started from another one.
		req.Command.Workdir = s.policy.Workdir
	}
	if req.Timeout > 0 {
		req.Command.Timeout = req.Timeout
	}
	defer neutraliseReport(&out) // last: after the reports below
	defer func() {
		defer phase.Begin(ctx, "exec.inspect-outputs")()
		s.inspectOutputs(&out)
	}()
	defer copyBackReport(&out)
	if req.Redactor == nil {
		out.Result, err = s.sandbox.Exec(ctx, req.Command, req.Streams)
		return out, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ceiling := &output.Ceiling{Limit: s.policy.Output.Ceiling, Stop: func() { cancel(ErrOutputCeiling) }}
	// One sink lock: stdout and stderr may be one file (a CI log, 2>&1),
	// and each stream writes whole lines only if no write is split.
	opts := output.Options{Limit: int(s.policy.Output.Limit), Redactor: req.Redactor, Raw: req.Raw, Ceiling: ceiling, SinkLock: &sync.Mutex{}}
	// What was shown (cleaned, bounded) is also what hints read.
	shown := output.NewCapture(2 * int(s.policy.Output.Limit))
	stdout := output.NewStream(teeTo(req.Streams.Stdout, shown), opts)
	stderr := output.NewStream(teeTo(req.Streams.Stderr, shown), opts)
	out.Result, err = s.sandbox.Exec(ctx, req.Command, backends.Streams{Stdout: stdout, Stderr: stderr})
	out.Stdout, out.Stderr = stdout.Close(), stderr.Close()
	if ceiling.Hit() {
		out.OutputCeiling, out.Canceled = true, false
		out.ExitCode, out.Signal = exitcode.Killed, 9
	}
	if err == nil && !out.Canceled {
		out.Hints = hints.From(s.policy, hints.Run{Output: shown.String(), ExitCode: ExitCode(out.Result),
			TimedOut: out.TimedOut, Argv: req.Command.Argv, CheckoutDiscarded: backends.CheckoutDiscarded(s.sandbox)}, hints.Host{})
	}
	return out, err
}

func teeTo(w io.Writer, also io.Writer) io.Writer {
	if w == nil {
		return also
	}
	return io.MultiWriter(w, also)
}

// neutraliseReport makes what the outcome reports for the caller to show
// safe to print: warnings, hints and the leftovers' fields name files the
// sandbox chose (and the backend's own messages may quote them), so each
// goes through the output pipeline's neutraliser, on one line.
func neutraliseReport(out *Outcome) {
	for _, ss := range [][]string{out.Warnings, out.Hints} {
		for i := range ss {
			ss[i] = output.Line(ss[i])
		}
	}
	for i := range out.Outputs.Leftovers {
		l := &out.Outputs.Leftovers[i]
		l.Path, l.Kind, l.Detail, l.Action = output.Line(l.Path), output.Line(l.Kind), output.Line(l.Detail), output.Line(l.Action)
	}
	out.Outputs.Incomplete = output.Line(out.Outputs.Incomplete)
	for i := range out.Conflicts {
		c := &out.Conflicts[i]
		c.Path, c.Detail, c.KeptAs = output.Line(c.Path), output.Line(c.Detail), output.Line(c.KeptAs)
	}
	out.CopyBackError = output.Line(out.CopyBackError)
}

// copyBackReport shows what copying the staged outputs back refused or
// could not do.
func copyBackReport(out *Outcome) {
	if out.CopyBackError != "" {
		out.Warnings = append(out.Warnings, out.CopyBackError)
	}
	if out.CopyBack == nil {
		return
	}
	if d := out.CopyBack.Discarded; len(d) > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("written outside the writable paths and discarded with the sandbox: %s (list a path in [sandbox] writable to keep it)", strings.Join(d, ", ")))
	}
	for _, c := range out.CopyBack.Changes {
		if c.Action == "conflict" {
			out.Conflicts = append(out.Conflicts, c)
			out.Warnings = append(out.Warnings, conflictLine(c))
			continue
		}
		out.Outputs.Leftovers = append(out.Outputs.Leftovers, hostfs.Leftover{Path: c.Path, Kind: c.Action, Detail: c.Detail, Action: "not copied to the host"})
	}
}

// conflictLine is one line for a conflict: which edit stays where.
func conflictLine(c stage.Change) string {
	if c.KeptAs == "" {
		return fmt.Sprintf("conflict: %s: %s", c.Path, c.Detail)
	}
	return fmt.Sprintf("conflict: %s was changed on the host while the command ran; the host's version stays and the sandbox's is kept as %s", c.Path, c.KeptAs)
}

// inspectOutputs neutralises what the command left in the writable paths
// (set-id bits, tool configs) and lists what a host reader must not follow.
func (s *Session) inspectOutputs(out *Outcome) {
	var rels []string
	for _, w := range s.policy.Writable() {
		if rel, err := filepath.Rel(s.policy.WorkspaceRoot, w); err == nil {
			rels = append(rels, rel)
		}
	}
	ins, err := hostfs.InspectOutputs(s.policy.WorkspaceRoot, rels, profiles.ToolConfigNames(), s.policy.AllowToolConfig)
	ins.Leftovers = append(out.Outputs.Leftovers, ins.Leftovers...)
	out.Outputs = ins
	// One warning per entry: a tool config removed, or still live.
	for _, e := range unjoin(err) {
		out.Warnings = append(out.Warnings, "inspecting the outputs: "+e.Error())
	}
	if ins.Incomplete != "" {
		out.Warnings = append(out.Warnings, "the outputs were not fully inspected ("+ins.Incomplete+"); do not follow symlinks or run tools in them")
	}
}

// unjoin lists the errors errors.Join put together (err alone otherwise).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// audit writes the record. A failure to audit keeps a refusal to one line,
// or becomes a warning when the command ran.
func (s *Session) audit(req Request, out *Outcome, runErr error) error {
	aerr := recordRun(req, *out, runErr)
	if aerr == nil {
		return runErr
	}
	if runErr != nil {
		return withAuditFailure(runErr, aerr)
	}
	out.Warnings = append(out.Warnings, aerr.Error())
	return nil
}

// withAuditFailure keeps a refusal to one line when its audit record could
// not be written either.
func withAuditFailure(refusal, aerr error) error {
	if aerr == nil {
		return refusal
	}
	return fmt.Errorf("%w (and the audit record was not written: %v)", refusal, aerr)
}

// Run is the one-shot path: Start, Exec, Close. It returns only once the
// sandbox is gone.
func Run(ctx context.Context, backend backends.Backend, req Request) (out Outcome, err error) {
	defer func() { neutraliseReport(&out) }()
	if err := backends.CheckArgv(req.Command.Argv); err != nil {
		return Outcome{}, RecordRefusal(req, err)
	}
	if req.Policy == nil {
		return Outcome{}, errors.New("no policy")
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = req.Policy.Timeout()
	}
	ttl := backends.TTL(req.Policy, timeout)
	endGate := phase.Begin(ctx, "gate")
	gk, err := req.Gatekeeper, error(nil)
	if gk == nil {
		gk, err = NewGatekeeper(req.Policy)
	}
	if err != nil {
		return Outcome{}, RecordRefusal(req, err)
	}
	// The gate judges before any sandbox exists.
	var judged *GateVerdict
	var gateWarnings []string
	if !req.NoGate {
		v, warns, err := gk.Judge(ctx, req.Command.Argv, req.Task, req.Confirm, req.Redactor)
		endGate()
		if err != nil {
			out := Outcome{Gate: v, Warnings: warns}
			if req.NoAudit {
				return out, err
			}
			return out, withAuditFailure(err, recordRun(req, out, err))
		}
		judged, gateWarnings = &v, warns
	}
	endStart := phase.Begin(ctx, "start")
	sess, err := start(ctx, backend, req.Policy, backends.StartOptions{TTL: ttl, OneShot: true, WarmHash: req.WarmHash}, gk)
	endStart()
	if err != nil {
		return Outcome{Gate: gateVerdictOrNone(judged)}, RecordRefusal(req, err)
	}
	if req.Started != nil {
		req.Started()
	}
	endExec := phase.Begin(ctx, "exec")
	out, err = sess.exec(ctx, req, judged)
	endExec()
	out.Warnings = append(gateWarnings, out.Warnings...)
	endClose := phase.Begin(ctx, "close")
	cerr := sess.Close(ctx)
	endClose()
	out.Warnings = append(out.Warnings, sess.sandbox.Warnings()...)
	if cerr != nil && err == nil && !slices.Contains(out.Warnings, cerr.Error()) {
		out.Warnings = append(out.Warnings, cerr.Error())
	}
	return out, err
}

// recordRun appends the audit record. A failure to audit is reported but
// does not change the run's outcome.
func recordRun(req Request, out Outcome, runErr error) error {
	p := req.Policy
	argv := req.Command.Argv
	if req.Redactor != nil {
		argv = make([]string, len(req.Command.Argv))
		for i, a := range req.Command.Argv {
			argv[i] = req.Redactor.Redact(a)
		}
	}
	hash := req.PolicyHash
	if hash == "" {
		hash = p.Hash()
	}
	rec := audit.Record{
		Time: time.Now().UTC(), Role: p.Role, Backend: p.Backend, Config: p.Config, Argv: argv, PolicyHash: hash,
		Gate: out.Gate.String(), ExitCode: ExitCode(out.Result), DurationMS: float64(out.Duration.Microseconds()) / 1000,
		TimedOut: out.TimedOut, OOMKilled: out.OOMKilled, Canceled: out.Canceled, OutputCeiling: out.OutputCeiling,
		Truncated: out.Stdout.Truncated || out.Stderr.Truncated, StdoutBytes: out.Stdout.BytesIn, StderrBytes: out.Stderr.BytesIn,
		Sandbox: out.Sandbox, Network: out.Network,
	}
	if runErr != nil {
		rec.ExitCode = exitcode.Refused
		rec.Error = runErr.Error()
		if req.Redactor != nil {
			rec.Error = req.Redactor.Redact(rec.Error)
		}
	}
	return audit.Append(p.AuditLog, rec)
}

// ExitCode maps a result to `run`'s exit code.
func ExitCode(res backends.Result) int {
	switch {
	case res.TimedOut:
		return exitcode.Timeout
	case res.ExitCode == 0 && res.CopyBackError != "":
		// Success is not what the caller got: its outputs did not all
		// come back.
		return exitcode.CopyBackFailed
	}
	return res.ExitCode
}

// SelfExe returns the path of the CLI's static triage-sandbox binary:
// TRIAGE_SANDBOX_SELF (tests, packagers) or this executable. It runs beside
// sandboxes (keeper, watcher) and inside them when the small
// triage-sandbox-inside beside it cannot be used (package insidebin). A
// dynamically linked binary would depend on the image's libc, so it is
// refused with the command that builds a static one.
func SelfExe() (string, error) {
	exe := os.Getenv("TRIAGE_SANDBOX_SELF")
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Errorf("finding the triage-sandbox binary: %w", err)
		}
	}
	exe, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return "", fmt.Errorf("resolving the triage-sandbox binary: %w", err)
	}
	static, err := insidebin.Static(exe)
	if err != nil {
		return "", err
	}
	if !static {
		return "", fmt.Errorf("%s is dynamically linked; the sandbox runs it inside the image, so build it static: CGO_ENABLED=0 go build ./cmd/triage-sandbox", exe)
	}
	return exe, nil
}

// RecordRefusal audits a run refused before it reached a backend and
// returns the refusal, extended when the audit record could not be written.
func RecordRefusal(req Request, err error) error {
	if req.Policy == nil || req.NoAudit {
		return err
	}
	return withAuditFailure(err, recordRun(req, Outcome{}, err))
}

func gateVerdictOrNone(v *GateVerdict) GateVerdict {
	if v == nil {
		return GateVerdict{}
	}
	return *v
}
