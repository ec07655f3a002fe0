package main

import (
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestTimeoutLine: the line a timeout prints names what gives the command
// longer, for the role that ran it: the config key that set the timeout
// (or the one to set), in which file, and --timeout. It used to say only
// "timed out after 2m0s; the sandbox was killed".
func TestTimeoutLine(t *testing.T) {
	pol := func(role profiles.Role, key string, def bool, cfg string, d time.Duration, session string) *policy.Policy {
		p := &policy.Policy{Role: role, TimeoutKey: key, TimeoutDefault: def, Config: cfg, WorkspaceRoot: "/ws"}
		p.Limits.Timeout = d
		p.Warm.Session = session
		return p
	}
	tests := []struct {
		name string
		p    *policy.Policy
		flag time.Duration
		want string
	}{
		{"reproducer, its default", pol(profiles.RoleReproducer, "[repro] timeout", true, "/ws/triage.toml", 5*time.Minute, ""), 0,
			`timed out after 5m (the reproducer's default timeout); the sandbox was killed; to give it longer, set [repro] timeout in /ws/triage.toml (e.g. timeout = "10m") or pass --timeout 10m`},
		{"reproducer, set in the file", pol(profiles.RoleReproducer, "[repro] timeout", false, "/ws/triage.toml", 2*time.Minute, ""), 0,
			`timed out after 2m (the reproducer's timeout, [repro] timeout in /ws/triage.toml); the sandbox was killed; to give it longer, raise [repro] timeout there (e.g. timeout = "4m") or pass --timeout 4m`},
		{"reproducer, no file", pol(profiles.RoleReproducer, "[repro] timeout", true, "", 5*time.Minute, ""), 0,
			`timed out after 5m (the reproducer's default timeout); the sandbox was killed; to give it longer, set [repro] timeout in a triage.toml at /ws (e.g. timeout = "10m") or pass --timeout 10m`},
		{"reproducer, --timeout", pol(profiles.RoleReproducer, "[sandbox.reproducer] timeout", false, "/ws/triage.toml", 5*time.Minute, ""), 90 * time.Second,
			`timed out after 1m30s (--timeout 1m30s); the sandbox was killed; to give it longer, pass --timeout 3m or leave it out for the reproducer's timeout, 5m ([sandbox.reproducer] timeout)`},
		{"agent session, its default", pol(profiles.RoleAgent, "[sandbox.agent] timeout", true, "/ws/triage.toml", 5*time.Minute, "s1"), 0,
			`timed out after 5m (the agent's default timeout); the command's whole process tree was killed, session s1 stays; to give it longer, set [sandbox.agent] timeout in /ws/triage.toml (e.g. timeout = "10m") or pass --timeout 10m`},
		{"near the ceiling", pol(profiles.RoleAgent, "[sandbox] timeout", false, "/ws/triage.toml", 20*time.Hour, ""), 0,
			`timed out after 20h (the agent's timeout, [sandbox] timeout in /ws/triage.toml); the sandbox was killed; to give it longer, raise [sandbox] timeout there (e.g. timeout = "24h") or pass --timeout 24h`},
		{"at the ceiling", pol(profiles.RoleAgent, "[sandbox] timeout", false, "/ws/triage.toml", 24*time.Hour, ""), 0,
			`timed out after 24h (the agent's timeout, [sandbox] timeout in /ws/triage.toml); the sandbox was killed; 24h is the longest a timeout may be`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := timeoutLine(tt.p, tt.flag); got != tt.want {
				t.Errorf("\n got  %s\n want %s", got, tt.want)
			}
		})
	}
}
