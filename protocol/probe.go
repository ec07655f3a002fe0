package protocol

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ProbeStep is one action a selftest probe tries (package inside/probe
// performs it by Op).
type ProbeStep struct {
	ID   string            `json:"id"`
	Op   string            `json:"op"`
	Args map[string]string `json:"args,omitempty"`
	// List carries multi-valued arguments (paths, addresses).
	List []string `json:"list,omitempty"`
	// Lane names the sequence the step runs in: the steps of one lane run
	// in order; the main lane ("") runs first with nothing beside it, then
	// the other lanes beside one another (programs that take seconds and
	// touch nothing the others look at: the run takes the longest of
	// them, not their sum).
	Lane string `json:"lane,omitempty"`
}

// ProbePlan is a probe's steps with how to end. In a spec it travels as
// base64 of its JSON: the plan names the selftest's canary tokens, which a
// probe looks for in every other process's cmdline (FS-06), and the
// supervisor's cmdline holds the probe's argv; encoded, no token is there
// to find. Decoding is as strict as any spec's.
type ProbePlan struct {
	Steps []ProbeStep `json:"steps"`
	// ExitCode and StderrMarker let the selftest check that status and
	// stderr propagate (control C-10).
	ExitCode     int    `json:"exit_code"`
	StderrMarker string `json:"stderr_marker,omitempty"`
}

// probePlan is ProbePlan's plain JSON form (no methods).
type probePlan ProbePlan

// MarshalJSON implements json.Marshaler: a base64 string of the plan's JSON.
func (p ProbePlan) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(probePlan(p))
	if err != nil {
		return nil, err
	}
	return json.Marshal(base64.RawURLEncoding.EncodeToString(b))
}

// UnmarshalJSON implements json.Unmarshaler (strictly).
func (p *ProbePlan) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("plan: want the plan's JSON in base64: %w", err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	var v probePlan
	if err := Strict(raw, maxSpec, &v); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	*p = ProbePlan(v)
	return nil
}

func (p *ProbePlan) validate() error {
	if len(p.Steps) == 0 {
		p.Steps = nil // [] and absent mean the same; one form round-trips
	}
	for i, s := range p.Steps {
		if s.ID == "" || s.Op == "" {
			return fmt.Errorf("plan: steps[%d]: id and op are required", i)
		}
		if len(s.Args) == 0 {
			p.Steps[i].Args = nil // {} and absent mean the same; one form round-trips
		}
		if len(s.List) == 0 {
			p.Steps[i].List = nil
		}
	}
	if p.ExitCode < 0 || p.ExitCode > 255 {
		return fmt.Errorf("plan: exit_code %d: want 0 to 255", p.ExitCode)
	}
	return nil
}

// ProbeObservation is what a step saw, one JSON line of a probe's stdout.
type ProbeObservation struct {
	ID string `json:"id"`
	// OK is true when the action itself succeeded (a read returned data, a
	// connect was answered, a write landed).
	OK bool `json:"ok"`
	// Errno names the error that stopped it ("ENOENT", "EROFS"...), if any.
	Errno string `json:"errno,omitempty"`
	// Detail is a short, escaped excerpt: what was seen, never a secret.
	Detail string `json:"detail,omitempty"`
	// Values are named measurements (counts, status fields).
	Values map[string]string `json:"values,omitempty"`
	// Ms is how long the step took, in milliseconds.
	Ms int64 `json:"ms"`
}

// ProbeUnsupportedKey, among an observation's Values, marks an op this
// OS cannot perform.
const ProbeUnsupportedKey = "unsupported"

// Unsupported reports whether the step could not be tried on this OS.
func (o ProbeObservation) Unsupported() bool { return o.Values[ProbeUnsupportedKey] != "" }

// maxProbeOutput bounds what ParseProbeObservations reads: the sandbox
// writes it.
const maxProbeOutput = 16 << 20

// ParseProbeObservations reads a probe's stdout (the sandbox wrote it):
// one observation per JSON value, strictly; values without an id are not
// observations and are left out. On an error it returns what it read so
// far with the error.
func ParseProbeObservations(r io.Reader) (map[string]ProbeObservation, error) {
	out := map[string]ProbeObservation{}
	dec := json.NewDecoder(io.LimitReader(r, maxProbeOutput))
	dec.DisallowUnknownFields()
	for {
		var o ProbeObservation
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("reading probe output: %w", err)
		}
		if o.ID != "" {
			out[o.ID] = o
		}
	}
}
