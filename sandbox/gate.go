package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/triage-sandbox/triage-sandbox/gate"
	"github.com/triage-sandbox/triage-sandbox/gate/confirm"
	"github.com/triage-sandbox/triage-sandbox/gate/guard"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// GateVerdict is what the gate decided about one command; every run's
// audit record and `run --json` carry it.
type GateVerdict struct {
	// Verdict is allow, deny or confirm (what `check` reports); for a run,
	// a confirm the operator approved is "allow" with Confirmed set.
	Verdict   string `json:"verdict"`
	Rule      string `json:"rule,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Confirmed string `json:"confirmed,omitempty"` // "once" or "session"
	// Guard is the decision model's verdict when it was asked.
	Guard *guard.Verdict `json:"guard,omitempty"`
}

// String is the verdict in one line, for the audit record.
func (v GateVerdict) String() string {
	if v.Verdict == "" {
		return "not judged"
	}
	s := v.Verdict
	if v.Rule != "" {
		s += " (rule " + v.Rule + ")"
	}
	if v.Confirmed != "" {
		s += " confirmed " + v.Confirmed
	}
	if v.Guard != nil {
		if v.Guard.Allowed {
			s += "; guard allowed"
		} else {
			s += "; guard blocked: " + v.Guard.Reason
		}
	}
	return s
}

// DeniedError is a command the gate refused: a result to hand back to the
// agent, not a crash. Its message ends with "Do not retry it in another
// form."
type DeniedError struct {
	Verdict GateVerdict
	Message string
}

func (e *DeniedError) Error() string { return e.Message }

// ConfirmFunc asks the operator about a command a confirm rule matched;
// false (or an error) denies it.
type ConfirmFunc func(ctx context.Context, p confirm.Prompt) (bool, error)

// Gatekeeper judges commands for one policy: the deny list, the
// operator's confirmation and the guard, in that order.
type Gatekeeper struct {
	policy *policy.Policy
	rules  *gate.Gate
	// guard is nil when it is off; guardErr says why it cannot be asked
	// when it is on (every command is then denied).
	guard    *guard.Guard
	guardErr error
}

// NewGatekeeper compiles p's gate. A guard that cannot be set up is not an
// error here: it denies every command, with the reason.
func NewGatekeeper(p *policy.Policy) (*Gatekeeper, error) {
	rules, err := gate.New(p.GateConfig())
	if err != nil {
		return nil, err
	}
	k := &Gatekeeper{policy: p, rules: rules}
	if g := p.Gate.Guard; g.Enabled {
		k.guard, k.guardErr = newGuard(g)
	}
	return k, nil
}

func newGuard(g policy.Guard) (*guard.Guard, error) {
	if g.URL == "" && len(g.Command) == 0 {
		return nil, fmt.Errorf("[sandbox.guard] is enabled but names no way to reach model %q: set url (an OpenAI-compatible endpoint) or command", g.Model)
	}
	secret, err := guard.LoadCacheSecret(g.KeyPath)
	if err != nil {
		return nil, fmt.Errorf("the guard's cache key: %w", err)
	}
	cfg := guard.Config{
		Model: g.Model, MinSafe: g.MinSafe, MaxRisk: g.MaxRisk, URL: g.URL, Command: g.Command,
		Timeout: g.Timeout, CachePath: g.CachePath, CacheSecret: secret, LogPath: g.LogPath,
	}
	if g.APIKeyEnv != "" {
		cfg.APIKey = os.Getenv(g.APIKeyEnv)
		if cfg.APIKey == "" {
			return nil, fmt.Errorf("[sandbox.guard] api_key_env: %s is not set", g.APIKeyEnv)
		}
	}
	return guard.New(cfg)
}

// GuardEnabled reports whether the decision model is asked.
func (k *Gatekeeper) GuardEnabled() bool { return k.policy.Gate.Guard.Enabled }

// Rules is the deny list's verdict alone (what `check` shows first).
func (k *Gatekeeper) Rules(argv []string) gate.Decision { return k.rules.CheckArgv(argv) }

// Judge decides whether argv may run. ask is nil when nobody can confirm;
// red redacts what the guard is shown. Warnings are for the caller (a
// guard log that could not be written).
func (k *Gatekeeper) Judge(ctx context.Context, argv []string, task string, ask ConfirmFunc, red *output.Redactor) (GateVerdict, []string, error) {
	return k.judge(ctx, argv, task, ask, red, k.kept(false))
}

// kept says whether the sandbox that runs the command keeps what earlier
// commands wrote: a session's does; ran is a library Session that has
// already run one.
func (k *Gatekeeper) kept(ran bool) bool { return ran || k.policy.Warm.Session != "" }

// judge is Judge for a sandbox that is kept or fresh (see scriptView).
func (k *Gatekeeper) judge(ctx context.Context, argv []string, task string, ask ConfirmFunc, red *output.Redactor, kept bool) (GateVerdict, []string, error) {
	d, words := k.rules.CheckArgvWords(argv)
	v := GateVerdict{Verdict: string(d.Verdict), Rule: d.Rule, Reason: d.Reason}
	switch d.Verdict {
	case gate.Deny:
		return v, nil, &DeniedError{Verdict: v, Message: d.Message()}
	case gate.Confirm:
		ok, err := false, error(nil)
		if ask != nil {
			ok, err = ask(ctx, confirm.Prompt{Command: confirm.Quote(argv), Rule: d.Rule + ": " + d.Reason})
		}
		if !ok {
			why := "nobody confirmed it"
			if err != nil {
				why = err.Error()
			}
			v.Verdict = string(gate.Deny)
			return v, nil, &DeniedError{Verdict: v, Message: fmt.Sprintf("DENIED: %s (rule %s) needs the operator's confirmation, and %s. Do not retry it in another form.", d.Reason, d.Rule, why)}
		}
		v.Verdict, v.Confirmed = string(gate.Allow), "yes"
	}
	if !k.GuardEnabled() {
		return v, nil, nil
	}
	gv, warn, unjudged := k.askGuard(ctx, argv, words, task, red, kept)
	v.Guard = &gv
	if unjudged {
		// Not "do not retry": the refusal names the form that can be judged.
		v.Verdict = string(gate.Deny)
		return v, warn, &DeniedError{Verdict: v, Message: "DENIED: " + gv.Reason + "."}
	}
	if !gv.Allowed {
		v.Verdict = string(gate.Deny)
		return v, warn, &DeniedError{Verdict: v, Message: "DENIED: " + gv.Reason + ". Do not retry it in another form."}
	}
	return v, warn, nil
}

// askGuard asks the decision model, with the command, task and scripts
// redacted first: a remote model must not receive what the sandbox
// withholds. unjudged: a script the command names is not the host's copy
// in its sandbox (Reason says which and why); the model was not asked.
//
// The files are looked for among argv's words and their pieces, and among
// words, the gate's parse of the command line (quotes removed, after a cd
// in the command joined with its directory).
func (k *Gatekeeper) askGuard(ctx context.Context, argv []string, words gate.Words, task string, red *output.Redactor, kept bool) (gv guard.Verdict, warns []string, unjudged bool) {
	if k.guardErr != nil {
		return guard.Verdict{Reason: "guard unavailable: " + k.guardErr.Error() + "; not running it"}, nil, false
	}
	redact := func(s string) string {
		if red == nil {
			return s
		}
		return red.Redact(s)
	}
	// The guard judges the copy that will run, or nothing: a script the
	// sandbox may hold its own version of is refused, never judged on the
	// host's copy.
	named := append(append([]string{}, argv...), words.All...)
	view := scriptView(k.policy, kept, scriptSet(k.policy, words.Scripts), scriptSet(k.policy, words.Written))
	scripts, err := guard.CollectScriptsIn(ctx, named, k.policy.WorkspaceRoot, k.policy.Workdir, guard.DefaultScriptBytes, view)
	if err != nil {
		return guard.Verdict{Reason: output.Line(redact(err.Error()))}, nil, true
	}
	for i := range scripts {
		scripts[i].Content = redact(scripts[i].Content)
	}
	gv, err = k.guard.Judge(ctx, guard.Request{Command: redact(confirm.Quote(argv)), Task: redact(task), Scripts: scripts})
	if err != nil {
		return gv, []string{"guard: " + err.Error()}, false
	}
	return gv, nil, false
}

// Denied reports whether err is the gate's refusal.
func Denied(err error) (*DeniedError, bool) {
	var d *DeniedError
	ok := errors.As(err, &d)
	return d, ok
}

// AskGuard asks the decision model alone, past the deny list: the
// selftest's questions about a harmless and a malicious command.
func (k *Gatekeeper) AskGuard(ctx context.Context, argv []string, task string, red *output.Redactor) (guard.Verdict, []string) {
	_, words := k.rules.CheckArgvWords(argv)
	gv, warns, _ := k.askGuard(ctx, argv, words, task, red, k.kept(false))
	return gv, warns
}
