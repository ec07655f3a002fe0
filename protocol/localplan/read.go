package localplan

import (
	"fmt"
	"io"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// maxPlan bounds a plan: it is a few kilobytes.
const maxPlan = 4 << 20

// Read decodes the plan the backend wrote for the helper, strictly (an
// unknown field is an error: a helper must not drop a restriction it does
// not know), and validates it.
func Read(r io.Reader) (Plan, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPlan+1))
	if err != nil {
		return Plan{}, fmt.Errorf("reading the plan: %w", err)
	}
	var p Plan
	if err := protocol.Strict(b, maxPlan, &p); err != nil {
		return Plan{}, fmt.Errorf("reading the plan: %w", err)
	}
	return p, p.Validate()
}
