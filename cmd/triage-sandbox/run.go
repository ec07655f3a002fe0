package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/gate/confirm"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/internal/progress"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/runreport"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// runFlags are `run`'s flags.
type runFlags struct {
	pf                 policyFlags
	timeout            time.Duration
	asJSON, stdin, raw bool
	task               string
	// out is where run writes and what it runs for: this process's
	// streams and host, or a front's (fast.go).
	out runIO
}

func newRunCmd() *cobra.Command { return newRunCmdFor(runIO{}) }

// newRunCmdFor is `run` writing to, and running for, out.
func newRunCmdFor(out runIO) *cobra.Command {
	f := runFlags{out: out.orDefault()}
	f.pf.host, f.pf.fast, f.pf.cache = f.out.host, f.out.fast != nil, f.out.cache
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG...]",
		Short: "Run one command (an argv, no shell) in the sandbox",
		Long: "Run one command in the sandbox. The argv is executed with no shell; ask for one\n" +
			"explicitly (-- sh -c '...'). Output is redacted, neutralised and capped (head and tail).\n" +
			fmt.Sprintf("Exit codes: the command's own; %d timeout; %d refused or failed before running;\n"+
				"%d not executable; %d not found; %d+N killed by signal N.",
				exitcode.Timeout, exitcode.Refused, exitcode.NotExecutable, exitcode.NotFound, exitcode.SignalBase),
		RunE: f.run,
	}
	f.pf.register(cmd, profiles.RoleAgent)
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "kill the command after this long, e.g. 90s or 5m (default: the role's timeout: [repro] timeout, or [sandbox.agent] timeout, in triage.toml)")
	cmd.Flags().StringVar(&f.pf.workdir, "workdir", "", "directory to start in; must be visible in the sandbox")
	cmd.Flags().StringVar(&f.pf.session, "session", "", "run in the named agent session's sandbox (started on first use; scratch persists between its commands)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print one JSON object with the result and the (capped) output")
	cmd.Flags().BoolVar(&f.stdin, "stdin", false, "pass standard input to the command (closed otherwise)")
	cmd.Flags().StringVar(&f.task, "task", "", "what the agent is working on (shown to the guard)")
	cmd.Flags().BoolVar(&f.raw, "raw", false, "do not neutralise terminal escapes and workflow commands (secrets are still redacted)")
	return cmd
}

// run runs args in the sandbox and reports how it went, on stderr and
// with --json as one object on stdout.
func (f *runFlags) run(cmd *cobra.Command, args []string) error {
	out := runreport.New(nil)
	stdout, stderr := f.out.stdout, f.out.stderr
	fail := func(err error) error {
		if f.asJSON {
			out.Refused(err)
			_ = json.NewEncoder(stdout).Encode(out)
		}
		return refuse(err)
	}
	if err := checkRunArgs(cmd, args, f.timeout); err != nil {
		return fail(err)
	}
	if f.out.fast == nil {
		paceForShortLife()
	}
	if err := f.out.fast.before(f); err != nil {
		return err
	}
	// In a keeper (here) the attach is to this process: nothing to dial.
	f.pf.dialEarly = f.out.here == nil
	endPolicy := phase.Begin(cmd.Context(), "config+policy")
	p, host, err := f.pf.compileWithHost()
	endPolicy()
	markCache(cmd.Context(), &f.pf)
	if err == nil {
		err = f.out.fast.after(p, args, &f.pf)
	}
	if fb := (*fallbackError)(nil); errors.As(err, &fb) {
		// Nothing ran and nothing was recorded: the full CLI runs it.
		f.pf.early.Close()
		return err
	}
	if err != nil {
		if host.Cwd != "" {
			// Refused before a policy existed: recorded all the same.
			err = sandbox.RecordConfigRefusal(host, f.pf.config, f.pf.role, args, err)
			out.Config = f.pf.configPath(host.Cwd)
		}
		return fail(err)
	}
	hash := f.pf.policyHash(p)
	out = runreport.NewHashed(p, hash)
	req := f.request(cmd.Context(), p, host, args)
	req.PolicyHash, req.WarmHash = hash, f.pf.keptWarmHash()
	b, err := f.backend(cmd.Context(), p)
	if err != nil {
		return fail(sandbox.RecordRefusal(req, err))
	}
	req.Started = func() { printWarningsTo(stderr, p.Warnings) }
	stdoutBuf, stderrBuf := f.wire(&req)
	// Long steps (an image root's first unpack, a pool's start) show a
	// progress line on a terminal; nothing on a pipe or with --json (nor
	// in a keeper, which has no long step left: its sandbox is up).
	ctx := cmd.Context()
	if f.out.fast == nil {
		ctx = progress.With(ctx, progress.ForTerminal(os.Stderr, !f.asJSON))
	}
	res, err := sandbox.Run(ctx, b, req)
	printWarningsTo(stderr, res.Warnings)
	out.SetOutcome(res, err, stdoutBuf.String(), stderrBuf.String())
	if err != nil {
		return fail(err)
	}
	if f.out.fast == nil && (p.Warm.Session != "" || p.Warm.Pool > 0) {
		noteRoute(host.Cwd, p)
	}
	reportRun(stderr, p, res, f.timeout)
	return f.exit(stdout, out, sandbox.ExitCode(res.Result))
}

// request is the sandbox request of a compiled policy: its redactor, and
// the gate a kept compile kept.
func (f *runFlags) request(ctx context.Context, p *policy.Policy, host policy.Host, args []string) sandbox.Request {
	defer phase.Begin(ctx, "redactor")()
	req := sandbox.Request{
		Policy: p, Timeout: f.timeout, Command: backends.Command{Argv: args},
		Redactor: f.pf.redactor(p, host), Raw: f.raw,
		Task: f.task, Confirm: operatorConfirm(&confirm.Memory{}),
	}
	if f.pf.kept != nil {
		req.Gatekeeper, _ = f.pf.gatekeeper(p)
	}
	return req
}

// exit ends a run that ran: its report with --json, and its exit code.
func (f *runFlags) exit(stdout io.Writer, out *runreport.Report, code int) error {
	if f.asJSON {
		if err := json.NewEncoder(stdout).Encode(out); err != nil {
			return refuse(err)
		}
	}
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

// backend is the backend p runs on: in a keeper (here) the keeper's own
// sandbox; else a new one, handed the keeper connection dialled early
// (closed when the backend is not a keeper's).
func (f *runFlags) backend(ctx context.Context, p *policy.Policy) (backends.Backend, error) {
	defer phase.Begin(ctx, "backend")()
	if f.out.here != nil {
		f.pf.early.Close()
		return f.out.here, nil
	}
	b, err := newBackend(ctx, p, true)
	if wb, ok := b.(*warm.Backend); ok {
		wb.Early = f.pf.early
	} else {
		f.pf.early.Close()
	}
	return b, err
}

// wire gives req its streams: the command's stdin when --stdin, and
// buffers for --json (returned) or the run's own writers.
func (f *runFlags) wire(req *sandbox.Request) (stdoutBuf, stderrBuf *bytes.Buffer) {
	if f.stdin {
		req.Command.Stdin = os.Stdin
	}
	stdoutBuf, stderrBuf = &bytes.Buffer{}, &bytes.Buffer{}
	if f.asJSON {
		req.Streams = backends.Streams{Stdout: stdoutBuf, Stderr: stderrBuf}
	} else {
		req.Streams = backends.Streams{Stdout: f.out.stdout, Stderr: f.out.stderr}
	}
	return stdoutBuf, stderrBuf
}

// checkRunArgs refuses a command line with no command, or one not after
// --, and a timeout out of range.
func checkRunArgs(cmd *cobra.Command, args []string, timeout time.Duration) error {
	if cmd.ArgsLenAtDash() < 0 && len(args) > 0 {
		return fmt.Errorf("put the command after --, e.g. triage-sandbox run -- %s", args[0])
	}
	if len(args) == 0 {
		return fmt.Errorf("empty command: give the program to run after --, e.g. triage-sandbox run -- python3 repro.py")
	}
	return config.CheckTimeoutFlag(timeout)
}

// reportRun tells the operator on stderr what the run left to know: the
// hints, special files left in the outputs, weaker modes accepted and why
// the command was stopped.
func reportRun(w io.Writer, p *policy.Policy, res sandbox.Outcome, timeout time.Duration) {
	for _, h := range res.Hints {
		fmt.Fprintln(w, "triage-sandbox: hint: "+output.Line(h))
	}
	if n := len(res.Outputs.Leftovers); n > 0 {
		fmt.Fprintf(w, "triage-sandbox: warning: the command left %d special file(s) in its outputs (%s); never follow or run them (see --json special_files)\n",
			n, leftoverSummary(res.Outputs.Leftovers))
	}
	for _, c := range res.Weakened {
		fmt.Fprintf(w, "triage-sandbox: warning: weaker mode accepted: the %s backend does not enforce %s\n", p.Backend, c)
	}
	switch {
	case res.TimedOut:
		fmt.Fprintln(w, "triage-sandbox: "+output.Line(timeoutLine(p, timeout)))
	case res.OutputCeiling:
		fmt.Fprintf(w, "triage-sandbox: stopped: the command printed more than %d bytes (raise [sandbox] output_ceiling if this is expected)\n", p.Output.Ceiling)
	case res.OOMKilled:
		fmt.Fprintln(w, "triage-sandbox: killed: out of memory (raise [sandbox] memory if this is expected)")
	}
}

// timeoutLine says that the command timed out, what was killed, and what
// gives it longer: --timeout, or the config key that set the role's
// timeout (or the one to set, when it is the role's default).
func timeoutLine(p *policy.Policy, flag time.Duration) string {
	d := p.Timeout()
	why := fmt.Sprintf("the %s's timeout, %s in %s", p.Role, p.TimeoutKey, p.Config)
	switch {
	case flag > 0:
		d, why = flag, "--timeout "+shortDuration(flag)
	case p.Config == "" && !p.TimeoutDefault:
		why = fmt.Sprintf("the %s's timeout, %s", p.Role, p.TimeoutKey)
	case p.TimeoutDefault:
		why = fmt.Sprintf("the %s's default timeout", p.Role)
	}
	killed := "the sandbox was killed"
	if p.Warm.Session != "" {
		killed = "the command's whole process tree was killed, session " + p.Warm.Session + " stays"
	}
	line := fmt.Sprintf("timed out after %s (%s); %s; ", shortDuration(d), why, killed)
	longer := shortDuration(min(2*d, config.MaxTimeout))
	where := p.Config
	if where == "" {
		where = "a triage.toml at " + p.WorkspaceRoot
	}
	switch {
	case d >= config.MaxTimeout:
		return line + shortDuration(config.MaxTimeout) + " is the longest a timeout may be"
	case flag > 0:
		return line + fmt.Sprintf("to give it longer, pass --timeout %s or leave it out for the %s's timeout, %s (%s)",
			longer, p.Role, shortDuration(p.Timeout()), p.TimeoutKey)
	case p.TimeoutDefault || p.Config == "":
		return line + fmt.Sprintf("to give it longer, set %s in %s (e.g. timeout = %q) or pass --timeout %s", p.TimeoutKey, where, longer, longer)
	}
	return line + fmt.Sprintf("to give it longer, raise %s there (e.g. timeout = %q) or pass --timeout %s", p.TimeoutKey, longer, longer)
}

// shortDuration is d as --timeout and triage.toml take it, without the
// zero units time.Duration.String adds ("5m", not "5m0s").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// leftoverSummary names the first few leftovers for the one warning line.
func leftoverSummary(ls []hostfs.Leftover) string {
	var parts []string
	for i, l := range ls {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ls)-3))
			break
		}
		parts = append(parts, l.Kind+" "+l.Path+": "+l.Action)
	}
	return strings.Join(parts, "; ")
}
