package sandbox

import (
	"context"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/gate"
	"github.com/triage-sandbox/triage-sandbox/output"
)

// Check is the gate's verdict on a command that is not run: what `check`
// prints and the MCP server's check tool returns.
type Check struct {
	GateVerdict
	// Code is `check`'s exit code: exitcode.CheckAllowed, CheckDenied or
	// CheckConfirm (a confirm rule would ask the operator).
	Code int `json:"-"`
	// Message says the verdict in one line; a denial ends with "Do not
	// retry it in another form."
	Message string `json:"message"`
	// Warnings are for the caller to show (a guard log not written).
	Warnings []string `json:"-"`
}

// Check judges argv as a run would, without running it and without asking
// anybody: the deny list, then the guard when it is enabled. A confirm
// rule is reported as such (Code CheckConfirm), not asked.
func (k *Gatekeeper) Check(ctx context.Context, argv []string, task string, red *output.Redactor) Check {
	d := k.Rules(argv)
	c := Check{GateVerdict: GateVerdict{Verdict: string(d.Verdict), Rule: d.Rule, Reason: d.Reason}, Code: exitcode.CheckAllowed}
	switch d.Verdict {
	case gate.Deny:
		c.Code = exitcode.CheckDenied
	case gate.Confirm:
		c.Code = exitcode.CheckConfirm
	default:
		if k.GuardEnabled() {
			// Nobody is asked here: a confirm rule was reported above.
			gv, warns, err := k.Judge(ctx, argv, task, nil, red)
			c.GateVerdict, c.Warnings = gv, warns
			if err != nil {
				c.Code = exitcode.CheckDenied
			}
		}
	}
	c.Message = checkMessage(c.Code, d, c.GateVerdict)
	return c
}

func checkMessage(code int, d gate.Decision, v GateVerdict) string {
	switch {
	case code == exitcode.CheckConfirm:
		return "CONFIRM: " + d.Reason + " (rule " + d.Rule + "): `" + d.Command + "` runs only if the operator says yes"
	case code == exitcode.CheckDenied && v.Guard != nil:
		return "DENIED: " + v.Guard.Reason
	case code == exitcode.CheckDenied:
		return d.Message()
	case v.Guard != nil:
		return "ALLOWED: no rule matched; the guard allowed it"
	}
	return "ALLOWED: no rule matched"
}
