package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/gate"
	"github.com/triage-sandbox/triage-sandbox/internal/insidebin"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/warm"
	"github.com/triage-sandbox/triage-sandbox/warm/fastpath"
)

// runIO is where `run` writes and whose host it runs for.
type runIO struct {
	stdout, stderr io.Writer
	host           func() (policy.Host, error)
	// fast is set when a keeper runs `run` for a front (runFast).
	fast *fastCheck
	// here, when set (with fast), is the keeper's backend for its own
	// sandbox (warm.Here): `run` attaches through it instead of dialling
	// the keeper it runs in.
	here backends.Backend
	// cache, when set (with fast), is the keeper's kept compiles.
	cache *compileCache
}

func (o runIO) orDefault() runIO {
	if o.stdout == nil {
		o.stdout = os.Stdout
	}
	if o.stderr == nil {
		o.stderr = os.Stderr
	}
	return o
}

// fallbackError: a keeper does not run this front's command; nothing ran
// and nothing was recorded, so the front runs the full CLI, which does
// what it always did (asks the operator, reads stdin, records a refused
// config, starts another keeper).
type fallbackError struct{ reason string }

func (e *fallbackError) Error() string { return "fast path not taken: " + e.reason }

// fastCheck is what a keeper checks, in `run`, before it runs a front's
// command as the CLI would: everything the keeper's process cannot do as
// the front's CLI would falls back.
type fastCheck struct {
	// mine: the compiled policy is the keeper's own (its session or its
	// pool, its warm hash), so the attach that follows never ends or
	// starts a keeper.
	mine func(*policy.Policy) bool
	// pool: the keeper is a pool's, whose runs name no session.
	pool bool
}

// before: what the flags ask that only the front's own process can give.
func (c *fastCheck) before(f *runFlags) error {
	switch {
	case c == nil:
		return nil
	case f.stdin:
		return &fallbackError{"--stdin: the command's input is the front's"}
	case f.pf.config != "" && !filepath.IsAbs(f.pf.config):
		return &fallbackError{"--config is relative to the front's directory"}
	case f.pf.workdir != "" && !filepath.IsAbs(f.pf.workdir):
		return &fallbackError{"--workdir is relative to the front's directory"}
	case !c.pool && f.pf.session == "":
		return &fallbackError{"not a session's run"}
	case c.pool && f.pf.session != "":
		return &fallbackError{"a session's run, not a pool's"}
	case os.Getenv(insidebin.EnvVar) != "":
		return &fallbackError{insidebin.EnvVar + " is set: its check speaks to the front's terminal"}
	}
	return nil
}

// after: the policy is the keeper's, and the gate will neither ask the
// operator (a terminal the keeper has not) nor call the guard.
// A kept compile (pf.kept) remembers both verdicts' inputs: whether the
// policy is the keeper's, and its gate.
func (c *fastCheck) after(p *policy.Policy, argv []string, pf *policyFlags) error {
	if c == nil {
		return nil
	}
	if !pf.kept.isMine(c.mine, p) {
		return &fallbackError{"the policy is not the keeper's"}
	}
	gk, err := pf.gatekeeper(p)
	if err != nil {
		return &fallbackError{"the gate: " + err.Error()}
	}
	if gk.GuardEnabled() {
		return &fallbackError{"the guard is enabled"}
	}
	if gk.Rules(argv).Verdict == gate.Confirm {
		return &fallbackError{"a confirm rule asks the operator"}
	}
	return nil
}

// noteRoute records, for a front in cwd running this process's argv,
// which keeper holds p's session or pool: a hint (the keeper decides), so
// a failure only costs the fast path. The route is named by the front's
// own reading of the argv (fastpath.ParseRun), so both sides agree on it.
func noteRoute(cwd string, p *policy.Policy) {
	if r, ok := fastpath.ParseRun(os.Args[1:]); ok {
		_ = warm.NoteRoute(warm.DefaultDir(), cwd, r, p)
	}
}

// runFast is a keeper's `run` for a front (package warm/fastpath), a
// session's or a pool's: the very `run` of this binary, parsing the front's argv, compiling the
// policy for the front's directory, gating, running through this keeper's
// sandbox (a pool's: one taken for this run, discarded after it), redacting and recording, writing on stdout and stderr what the
// CLI would write on its own. It returns the CLI's exit code, or a
// reason to fall back (nothing ran). Only the keeper's own environment
// and binary are served: the front's must be the same (self is the
// keeper's fastpath.FileID).
func runFast(ctx context.Context, self string, check fastCheck, here backends.Backend, cache *compileCache, req fastpath.Request, stdout, stderr io.Writer) (int, string) {
	if !fastpath.SameEnv(os.Environ(), req.Env) {
		return 0, "the environment is not the keeper's"
	}
	if self == "" || self != req.CLI {
		return 0, "the CLI is not the keeper's binary"
	}
	host := func() (policy.Host, error) {
		h, err := policy.CurrentHost()
		h.Cwd, h.Env = req.Cwd, req.Env
		return h, err
	}
	root := newBareRootCmd()
	root.AddCommand(newRunCmdFor(runIO{stdout: stdout, stderr: stderr, host: host, fast: &check, here: here, cache: cache}))
	root.SetArgs(req.Args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(eofReader{})
	err := root.ExecuteContext(ctx)
	if fb := (*fallbackError)(nil); errors.As(err, &fb) {
		return 0, fb.reason
	}
	return reportTo(stderr, err), ""
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
