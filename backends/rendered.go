package backends

import (
	"strings"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Rendered is a backend's neutral account of what one rendering gives the
// sandbox, read back from the rendered artifact (the create request, the
// bundle, the plan, the profile, the pod and its exec), never copied from
// the policy: backends/testkit/conformance compares it with the policy for
// every backend, so a field a backend drops is either a capability it
// declares missing (Enforce refuses or reports it) or a failing test.
type Rendered struct {
	// Mounts are the host paths visible inside, at their own path.
	Mounts []RenderedMount
	// Env are the names of the command's environment variables.
	Env []string
	// Network is what the command can reach (policy.NetworkMode terms);
	// OwnNetwork: a network namespace of its own, not the host's.
	Network    policy.NetworkMode
	OwnNetwork bool
	// Memory (bytes), Pids and CPUs are the limits applied to the whole
	// sandbox; zero where none is.
	Memory, Pids int64
	CPUs         float64
	// Rlimits are the per-process limits the command starts under.
	Rlimits []RenderedRlimit
	// UID and GID are the identity the command runs as; Switched says the
	// rendering sets it (not the caller's own, whatever it is).
	UID, GID int
	Switched bool
	// Masked are the paths hidden under a mount.
	Masked []string
}

// RenderedMount is one host path visible inside.
type RenderedMount struct {
	Path string
	// Writable: the command may write it; Staged: into a bounded copy,
	// not the host's (policy.Policy.Staged).
	Writable, Staged bool
	// Tree: everything below Path is visible too (a directory bind or a
	// subpath rule).
	Tree bool
}

// RenderedRlimit is one per-process limit, by Linux name without RLIMIT_.
type RenderedRlimit struct {
	Name       string
	Soft, Hard uint64
}

// EnvNames are the names of an environment given as NAME=value.
func EnvNames(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		out = append(out, name)
	}
	return out
}
