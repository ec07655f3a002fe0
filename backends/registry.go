package backends

import (
	"fmt"
	"sort"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Env is what a backend factory may use from the outside world.
type Env struct {
	// SelfExe is the CLI's static triage-sandbox binary: what backends run
	// beside a sandbox (the docker backend's watcher), and inside it when
	// InsideExe is empty.
	SelfExe string
	// InsideExe is the static binary backends run and mount (read-only)
	// inside the sandbox as its holder, supervisor, helper and probe: the
	// small triage-sandbox-inside when package insidebin chose it, else
	// SelfExe (empty means SelfExe).
	InsideExe string
}

// Inside is the binary that runs inside sandboxes: InsideExe, or SelfExe
// when there is no separate one.
func (e Env) Inside() string {
	if e.InsideExe != "" {
		return e.InsideExe
	}
	return e.SelfExe
}

// Factory makes a backend.
type Factory func(env Env) (Backend, error)

// Entry is one backend a registry can make.
type Entry struct {
	Name string
	// Summary is one line for help texts: what the backend runs sandboxes
	// with and where it fits.
	Summary string
	// Capabilities says what the backend enforces, known before it is made
	// so a policy can be built for it without a daemon. A func: asked only
	// for the backend a policy is built for (local's looks at the cgroup
	// hierarchy), never by help texts or other backends' runs.
	Capabilities func() []policy.Capability
	New          Factory
	// Binary is the program this backend is compiled into when it is not
	// this one ("" : this binary has it; New then makes it). A run for it
	// is handed over to that program (cmd decides, from the compiled
	// policy), and `gc` has that program sweep it.
	Binary string
	// GetBinary says how to build or install Binary, for the line that
	// refuses when it cannot be found.
	GetBinary string
}

// Registry maps backend names to their entries. It is built by the caller
// (no package-level state), so tests can register fakes; backends/builtin
// returns the one with every backend this module ships.
type Registry struct {
	entries map[string]Entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{entries: map[string]Entry{}}
}

// Register adds a backend; a later entry of the same name replaces it.
func (r *Registry) Register(e Entry) {
	r.entries[e.Name] = e
}

// Capabilities returns what the named backend enforces.
func (r *Registry) Capabilities(name string) ([]policy.Capability, bool) {
	e, ok := r.entries[name]
	if !ok || e.Capabilities == nil {
		return nil, ok
	}
	return e.Capabilities(), true
}

// Summary returns the named backend's one-line description ("" when it
// has none or is not registered).
func (r *Registry) Summary(name string) string {
	return r.entries[name].Summary
}

// Names lists the registered backends, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.entries))
	for n := range r.entries {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Elsewhere is the program the named backend is compiled into when it is
// not this one ("" : here, or not registered), and how to get it.
func (r *Registry) Elsewhere(name string) (binary, howToGet string) {
	e := r.entries[name]
	return e.Binary, e.GetBinary
}

// New makes the named backend.
func (r *Registry) New(name string, env Env) (Backend, error) {
	e, ok := r.entries[name]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q: choose one of %s", name, strings.Join(r.Names(), ", "))
	}
	return e.New(env)
}
