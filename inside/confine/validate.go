package confine

import (
	"fmt"

	"github.com/triage-sandbox/triage-sandbox/inside/seccompfilter"
)

// Validate reports every problem with the plan at once, each naming the
// field (localplan.Plan.Validate), and a seccomp set the filter does not
// have. Enter and Restrict call it; the backend calls it when rendering,
// so a bad plan fails before any process starts.
func Validate(p Plan) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if _, err := seccompfilter.RuleSet(p.Seccomp.Set); err != nil {
		return fmt.Errorf("confine: invalid plan: seccomp.set: %w", err)
	}
	return nil
}
