// Package backends defines what a sandbox backend is and keeps the registry
// of them. A backend only translates a policy.Policy into its own terms and
// runs it; it never decides what is allowed.
package backends

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Command is what to run: an argv, executed with no shell.
type Command struct {
	Argv []string
	// Stdin is passed to the command when non-nil; otherwise its stdin is closed.
	Stdin io.Reader
	// Timeout counts from the moment the command starts (sandbox set-up is
	// not charged to it); when it passes, the whole sandbox is killed and
	// Result.TimedOut is set. Zero means no limit.
	Timeout time.Duration
}

// Streams receive the command's output as it is produced.
type Streams struct {
	Stdout io.Writer
	Stderr io.Writer
}

// Result is how a run ended. A command that ran and exited non-zero is a
// Result, not an error; errors mean the sandbox could not run it.
type Result struct {
	ExitCode  int           `json:"exit_code"`
	Signal    int           `json:"signal,omitempty"`
	TimedOut  bool          `json:"timed_out"`
	Canceled  bool          `json:"canceled,omitempty"`
	OOMKilled bool          `json:"oom_killed"`
	Duration  time.Duration `json:"duration_ns"`
	// Sandbox names what ran it (container id, profile hash, ...).
	Sandbox string `json:"sandbox,omitempty"`
}

// Artifact is a backend's rendering of a policy: what `render` prints.
type Artifact interface {
	// JSON is the artifact in the form its consumer reads (a container create
	// request, an OCI config.json, an SBPL profile wrapped in JSON...).
	JSON() ([]byte, error)
}

// Backend runs commands under a policy.
type Backend interface {
	Name() string
	// Available says whether this backend can run here, and why not.
	Available(ctx context.Context) error
	// Ready is Available plus what p needs (the image), with the command
	// that fixes what is missing.
	Ready(ctx context.Context, p *policy.Policy) error
	// Render translates the policy for cmd without running anything.
	Render(p *policy.Policy, cmd Command) (Artifact, error)
	// Run runs cmd under p. Cancelling ctx (Ctrl-C) kills the sandbox and
	// sets Result.Canceled.
	Run(ctx context.Context, p *policy.Policy, cmd Command, out Streams) (Result, error)
	// SelfPath is where the triage-sandbox binary is visible inside the
	// sandbox (the selftest runs its probe there).
	SelfPath() string
	// Describe names what the sandbox runs on (engine and kernel versions,
	// image), for reports.
	Describe(ctx context.Context, p *policy.Policy) map[string]string
}

// Env is what a backend factory may use from the outside world.
type Env struct {
	// SelfExe is a static triage-sandbox binary that backends mount (read-only)
	// into the sandbox as its init and probe.
	SelfExe string
}

// Factory makes a backend.
type Factory func(env Env) (Backend, error)

// Registry maps backend names to factories. It is built by the caller (no
// package-level state), so tests can register fakes.
type Registry struct {
	factories map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Register adds a backend.
func (r *Registry) Register(name string, f Factory) { r.factories[name] = f }

// Names lists the registered backends.
func (r *Registry) Names() []string {
	var out []string
	for n := range r.factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New makes the named backend.
func (r *Registry) New(name string, env Env) (Backend, error) {
	f, ok := r.factories[name]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q: choose one of %s", name, strings.Join(r.Names(), ", "))
	}
	return f(env)
}
