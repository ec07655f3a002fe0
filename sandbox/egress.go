package sandbox

import (
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/hints"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// neutraliseDecisions makes what the sandbox chose in ds (the name, and
// the reasons quoting it) safe to print: ds come from a run's own proxy
// or, for a session or pool, over the keeper's socket.
func neutraliseDecisions(ds []egress.Decision) []egress.Decision {
	for i := range ds {
		ds[i].Host, ds[i].Reason, ds[i].Cut = output.Line(ds[i].Host), output.Line(ds[i].Reason), output.Line(ds[i].Cut)
		ds[i].Method, ds[i].Rule, ds[i].Addr = output.Line(ds[i].Method), output.Line(ds[i].Rule), output.Line(ds[i].Addr)
	}
	return ds
}

// decisionReporter is a sandbox whose network proxy another process
// holds (a keeper's session or pooled sandbox): it reports the decisions
// on its last command's connections.
type decisionReporter interface {
	NetworkDecisions() []egress.Decision
}

// egressHints name, for each refused connection, what would allow it.
func egressHints(p *policy.Policy, ds []egress.Decision) []string {
	var refused []hints.Refusal
	for _, d := range ds {
		if !d.Allowed {
			refused = append(refused, hints.Refusal{Host: d.Host, Port: d.Port, Reason: d.Reason})
		}
	}
	return hints.Egress(p, refused)
}
