package confine

import (
	"encoding/json"
	"fmt"
	"io"
)

// maxPlan bounds what ReadPlan reads: a plan is a few kilobytes.
const maxPlan = 4 << 20

// ReadPlan decodes and validates the plan the backend wrote for the helper.
// Unknown fields are an error: a helper older than its orchestrator must not
// drop a restriction it does not know.
func ReadPlan(r io.Reader) (Plan, error) {
	var p Plan
	dec := json.NewDecoder(io.LimitReader(r, maxPlan))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("confine: reading the plan: %w", err)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}
