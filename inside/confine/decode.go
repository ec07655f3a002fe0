package confine

import (
	"fmt"
	"io"

	"github.com/triage-sandbox/triage-sandbox/protocol/localplan"
)

// ReadPlan decodes (localplan.Read) and validates the plan the backend
// wrote for the helper.
func ReadPlan(r io.Reader) (Plan, error) {
	p, err := localplan.Read(r)
	if err != nil {
		return Plan{}, fmt.Errorf("confine: %w", err)
	}
	return p, Validate(p)
}
