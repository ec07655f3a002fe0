package selftest

import (
	"time"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Status of one check.
const (
	StatusOK           = "ok"
	StatusFail         = "FAIL"
	StatusInconclusive = "INCONCLUSIVE"
	// StatusNotApplicable: the backend does not enforce what the check
	// needs (a weaker mode the config accepted); never counted as ok.
	StatusNotApplicable = "n/a"
)

// Result is one check's outcome.
type Result struct {
	ID       string      `json:"id"`
	Name     string      `json:"name"`
	Category string      `json:"category"`
	Expected Expectation `json:"expected"`
	Observed string      `json:"observed"`
	Status   string      `json:"status"`
	OK       bool        `json:"ok"`
	Evidence string      `json:"evidence"`
	Control  string      `json:"control,omitempty"`
	Fix      string      `json:"fix,omitempty"`
}

// RoleReport is one role's block of the report.
type RoleReport struct {
	Role       profiles.Role `json:"role"`
	Backend    string        `json:"backend"`
	PolicyHash string        `json:"policy_hash"`
	// ProductionHash is the hash of the same config compiled for the real
	// workspace and caller: the selftest's own policy differs only in
	// paths (the canary home, workspace and checkout) and environment.
	ProductionHash string            `json:"production_policy_hash,omitempty"`
	Network        string            `json:"network"`
	Versions       map[string]string `json:"versions"`
	Results        []Result          `json:"checks"`
	// Weakened are requirements the backend does not enforce and the
	// config accepted ([sandbox] accept_weaker).
	Weakened []policy.Capability `json:"weakened,omitempty"`
	Error    string              `json:"error,omitempty"`
	Duration time.Duration       `json:"duration_ns"`
	// Phases is how long each part took (controls, main, second, timeout,
	// browser, output), to see where the time goes.
	Phases map[string]time.Duration `json:"phase_durations_ns,omitempty"`
	// Slowest are the probe steps that took longest inside the sandbox.
	Slowest []string `json:"slowest_steps,omitempty"`
}

// Counts tallies statuses.
func (r *RoleReport) Counts() (ok, failed, inconclusive int) {
	for _, res := range r.Results {
		switch res.Status {
		case StatusOK:
			ok++
		case StatusFail:
			failed++
		case StatusNotApplicable:
		default:
			inconclusive++
		}
	}
	return
}

// NotApplicable counts the checks the backend could not run.
func (r *RoleReport) NotApplicable() int {
	n := 0
	for _, res := range r.Results {
		if res.Status == StatusNotApplicable {
			n++
		}
	}
	return n
}

// Report is the whole selftest.
type Report struct {
	Backend  string        `json:"backend"`
	Roles    []*RoleReport `json:"roles"`
	Duration time.Duration `json:"duration_ns"`
}

// Passed is true when every check of every role is ok.
func (r *Report) Passed() bool {
	for _, rr := range r.Roles {
		if rr.Error != "" || len(rr.Results) == 0 {
			return false
		}
		if _, f, i := rr.Counts(); f+i > 0 {
			return false
		}
	}
	return true
}
