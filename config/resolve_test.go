package config

import (
	"maps"
	"slices"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func TestResolve(t *testing.T) {
	const doc = `[sandbox]
network = false
memory = "1g"
writable = ["base"]
env = ["A"]
set_env = { K = "base" }

[sandbox.agent]
network = true
writable = []

[sandbox.reproducer]
memory = "2g"
set_env = { K = "repro" }
env = ["B", "C"]
`
	f, err := Parse("triage.toml", []byte(doc), "/ws")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		role     profiles.Role
		network  bool
		memory   int64
		writable []string
		env      []string
		setEnv   map[string]string
	}{
		// Set in the role table: replaces; an empty list is set too.
		{"agent", true, 1 << 30, []string{}, []string{"A"}, map[string]string{"K": "base"}},
		// Lists and tables are replaced whole, never merged.
		{"reproducer", false, 2 << 30, []string{"base"}, []string{"B", "C"}, map[string]string{"K": "repro"}},
		// An unknown role gets [sandbox] alone.
		{"other", false, 1 << 30, []string{"base"}, []string{"A"}, map[string]string{"K": "base"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			r := f.Resolve(tt.role)
			if r.Network == nil || r.Network.On != tt.network {
				t.Errorf("Network = %v, want %v", r.Network, tt.network)
			}
			if r.Memory == nil || *r.Memory != tt.memory {
				t.Errorf("Memory = %v, want %d", r.Memory, tt.memory)
			}
			if r.Writable == nil || !slices.Equal(r.Writable, tt.writable) {
				t.Errorf("Writable = %#v, want %#v", r.Writable, tt.writable)
			}
			if !slices.Equal(r.Env, tt.env) {
				t.Errorf("Env = %q, want %q", r.Env, tt.env)
			}
			if !maps.Equal(r.SetEnv, tt.setEnv) {
				t.Errorf("SetEnv = %v, want %v", r.SetEnv, tt.setEnv)
			}
			if r.Backend != nil || r.Image != nil || r.Deny != nil {
				t.Errorf("unset keys became set: %+v", r)
			}
		})
	}
}

// TestResolveNoAlias checks that changing a resolved Sandbox leaves the File alone.
func TestResolveNoAlias(t *testing.T) {
	f, err := Parse("triage.toml", []byte("[sandbox]\nnetwork = false\nenv = [\"A\"]\nset_env = { K = \"v\" }\n"), "/ws")
	if err != nil {
		t.Fatal(err)
	}
	r := f.Resolve("agent")
	r.Network.On = true
	r.Env[0] = "Z"
	r.SetEnv["K"] = "changed"
	if f.Sandbox.Network.On || f.Sandbox.Env[0] != "A" || f.Sandbox.SetEnv["K"] != "v" {
		t.Errorf("Resolve result aliases the File: %+v", f.Sandbox)
	}
}

// TestTimeoutKey: a timeout message names the key that set the role's
// timeout, or the one to set when it is the default: for a reproducer
// the harness's own [repro] timeout, for the agent its table's.
func TestTimeoutKey(t *testing.T) {
	tests := []struct {
		toml        string
		role        profiles.Role
		want        string
		wantSetHere bool
	}{
		{"", profiles.RoleReproducer, "[repro] timeout", false},
		{"", profiles.RoleAgent, "[sandbox.agent] timeout", false},
		{"[repro]\ntimeout = 120\n", profiles.RoleReproducer, "[repro] timeout", true},
		{"[repro]\ntimeout = 120\n", profiles.RoleAgent, "[sandbox.agent] timeout", false},
		{"[repro]\ntimeout = 120\n[sandbox]\ntimeout = 60\n", profiles.RoleReproducer, "[sandbox] timeout", true},
		{"[sandbox]\ntimeout = 60\n", profiles.RoleAgent, "[sandbox] timeout", true},
		{"[sandbox]\ntimeout = 60\n[sandbox.reproducer]\ntimeout = \"5m\"\n", profiles.RoleReproducer, "[sandbox.reproducer] timeout", true},
		{"[sandbox.agent]\ntimeout = \"5m\"\n", profiles.RoleAgent, "[sandbox.agent] timeout", true},
	}
	for _, tt := range tests {
		f, err := Parse("triage.toml", []byte(tt.toml), "/ws")
		if err != nil {
			t.Fatal(err)
		}
		if got, set := f.TimeoutKey(tt.role); got != tt.want || set != tt.wantSetHere {
			t.Errorf("%q as %s: TimeoutKey = %q, %v; want %q, %v", tt.toml, tt.role, got, set, tt.want, tt.wantSetHere)
		}
	}
}
