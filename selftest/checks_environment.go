package selftest

import (
	"strconv"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// environmentChecks look for the caller's secrets in the environment and
// in a host process's memory.
func environmentChecks() []Check {
	return []Check{
		{ID: "ENV-01", Name: "see API keys in the environment", Category: "environment",
			Steps: func(e *Env) []probe.Step {
				var vals []string
				for _, v := range e.C.Env {
					vals = append(vals, v)
				}
				return one(step("ENV-01", "env_scan", nil, vals...))
			},
			Judge: okJudge("ENV-01"), Fix: "pass variables by allow-list only; list credentials in [sandbox] env only by exact name"},
		{ID: "ENV-02", Name: "read a host process's memory", Category: "environment", Requires: []policy.Capability{profiles.CapPidNamespace},
			Steps: func(e *Env) []probe.Step {
				return one(step("ENV-02", "proc_mem", map[string]string{"pid": strconv.Itoa(e.C.SentinelPID())}))
			},
			Judge: okJudge("ENV-02"), Fix: "the sandbox must have its own pid namespace"},
	}
}
