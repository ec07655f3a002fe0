// Package backends defines what a sandbox backend is and keeps the registry
// of them. A backend only translates a policy.Policy into its own terms and
// runs it; it never decides what is allowed.
package backends

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// Command is what to run: an argv, executed with no shell.
type Command struct {
	Argv []string
	// Workdir is the directory this command starts in; "" means the
	// policy's. It is the command's, not the sandbox's: a session keeps
	// its sandbox whatever directory each command starts in.
	Workdir string
	// Stdin is passed to the command when non-nil; otherwise its stdin is closed.
	Stdin io.Reader
	// Timeout counts from the moment the command starts (sandbox set-up is
	// not charged to it); when it passes, the command's whole process tree
	// is killed and Result.TimedOut is set. Zero means no limit.
	Timeout time.Duration
}

// Streams receive the command's output as it is produced.
type Streams struct {
	Stdout io.Writer
	Stderr io.Writer
}

// Result is how a command ended. A command that ran and exited non-zero is
// a Result, not an error; errors mean the sandbox could not run it. It is
// the protocol's (protocol.Result): a keeper sends it to its client.
type Result = protocol.Result

// Artifact is a backend's rendering of a policy: what `render` prints.
type Artifact interface {
	// JSON is the artifact in the form its consumer reads (a container create
	// request, an OCI config.json, an SBPL profile wrapped in JSON...).
	JSON() ([]byte, error)
	// Summary is what the rendering gives the sandbox, in neutral terms
	// (Rendered), read from the rendering itself.
	Summary() (Rendered, error)
}

// Backend starts sandboxes for policies. It only translates the policy
// into its own terms; it never decides what is allowed.
type Backend interface {
	Name() string
	// Capabilities are what this backend enforces; policy.Enforce refuses a
	// policy needing more unless the config accepts the weaker mode.
	Capabilities() []policy.Capability
	// Available says whether this backend can run here, and why not.
	Available(ctx context.Context) error
	// Ready is Available plus what p needs (the image), with the command
	// that fixes what is missing.
	Ready(ctx context.Context, p *policy.Policy) error
	// Render translates the policy for cmd without running anything.
	Render(p *policy.Policy, cmd Command) (Artifact, error)
	// Start makes a sandbox for p that then takes commands. The sandbox
	// dies with this process even if it is killed with SIGKILL (the
	// policy's lifeline), and no later than its TTL.
	Start(ctx context.Context, p *policy.Policy, opts StartOptions) (Sandbox, error)
	// Sweep removes sandboxes whose owner is gone or whose lifetime passed,
	// judged by its ownership records only; it returns what it removed.
	Sweep(ctx context.Context) ([]string, error)
	// SelfPath is where the triage-sandbox binary is visible inside the
	// sandbox (the selftest runs its probe there).
	SelfPath() string
	// Describe names what the sandbox runs on (engine and kernel versions,
	// image), for reports.
	Describe(ctx context.Context, p *policy.Policy) map[string]string
}

// Layer is one confinement mechanism a backend relies on, as found here.
type Layer struct {
	Name      string
	Available bool
	// Detail is what was found; Cost what the sandbox loses without it.
	Detail, Cost string
}

// LayerReporter is a backend that can say which of its layers this
// machine has (doctor prints them).
type LayerReporter interface {
	Layers() []Layer
}

// PolicyLayerReporter is a backend whose layers depend on the configured
// policy (kubernetes: the namespace's admission and the RuntimeClass);
// doctor prints them per role.
type PolicyLayerReporter interface {
	LayersFor(p *policy.Policy) []Layer
}

// EngineReporter is a backend that talks to an engine (a daemon) and can
// say which one answers, and where (doctor prints it): "Podman 4.3.1
// (API 1.41) at unix:///run/podman/podman.sock".
type EngineReporter interface {
	EngineInfo(ctx context.Context) (string, error)
}

// Attacher is a backend whose Start for some policies starts no sandbox of
// this process: it attaches to one that another process (a session's or
// pool's keeper) started and owns. The sweep of dead owners' leftovers
// that goes beside every start is then that process's, not the caller's.
type Attacher interface {
	Attaches(p *policy.Policy) bool
}

// StartOptions are per-sandbox choices that are not policy.
type StartOptions struct {
	// TTL bounds the sandbox's whole life (its commands' timeouts plus the
	// policy's margin); zero means the policy's role timeout plus margin.
	TTL time.Duration
	// DeferStaging: Start returns once the sandbox runs and waits for its
	// staged writable paths, and its Stager's Stage copies them in later
	// (a pool's sandbox, when a run takes it, so the run sees the host as
	// it is then). A backend that stages nothing ignores it.
	DeferStaging bool
	// OneShot: the sandbox runs one command and is closed (the cold `run`
	// path sets it; sessions and pools never do). A backend may then keep
	// what a long-lived sandbox must not (the oci backend keeps its runtime
	// in the foreground, which deletes the container itself at the end).
	OneShot bool
	// WarmHash, when set, is the policy's WarmHash already computed (a
	// keeper's kept compile's): a keeper's own backend compares it with
	// its own instead of hashing the policy again.
	WarmHash string
}

// ClusterPool is a backend whose cluster can keep a pool of started
// sandboxes itself (the kubernetes backend's agent-sandbox
// SandboxWarmPool). KeepPool asks it to keep p.Warm.Pool sandboxes of p
// started, each to live ttl once taken; ok false: not for this policy
// (the keeper then fills a pool of its own). Where it does, the keeper
// holds no ready sandbox: each take is a Start, which the backend serves
// from the cluster's pool, and release removes the pool.
type ClusterPool interface {
	KeepPool(ctx context.Context, p *policy.Policy, ttl time.Duration) (release func(context.Context) error, ok bool, err error)
}

// Stager is a sandbox that can take its staged copy after Start: one
// started with StartOptions.DeferStaging gets the writable paths as they
// are when Stage is called, with the same bounds and the same copy back
// as at a start. It runs no command before. On one whose copy is in place
// (or that stages nothing) Stage does nothing.
type Stager interface {
	Stage(ctx context.Context) error
}

// Sandbox is a started sandbox.
type Sandbox interface {
	// ID names it (container id, ...), for audit and reports.
	ID() string
	// Scratch is where its HOME and TMPDIR are, as the command sees them.
	Scratch() policy.ScratchPaths
	// Exec runs one command. Cancelling ctx (Ctrl-C) kills the command's
	// tree and sets Result.Canceled. Commands may run one after another.
	Exec(ctx context.Context, cmd Command, out Streams) (Result, error)
	// Close kills everything in the sandbox and returns once it is gone.
	// It is idempotent; the second and later calls return the first's error.
	Close(ctx context.Context) error
	// Warnings are things the caller should show (a removal that failed and
	// left work for `gc`); they are never printed by the backend.
	Warnings() []string
}

// DiscardReporter is a sandbox that says whether its project checkout is
// writable with the writes discarded: whether its backend made the overlay
// the policy asks for (policy.Mount.Discard), not only whether it asked.
type DiscardReporter interface {
	CheckoutDiscarded() bool
}

// CheckoutDiscarded: sb's checkout is writable, its writes discarded. A
// sandbox that does not say is taken as read-only, so a hint never calls
// a path writable that may not be.
func CheckoutDiscarded(sb Sandbox) bool {
	r, ok := sb.(DiscardReporter)
	return ok && r.CheckoutDiscarded()
}

// CheckArgv refuses an argv with no program.
func CheckArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("empty command: give the program to run after --, e.g. triage-sandbox run -- python3 repro.py")
	}
	return nil
}

// TTL is the lifetime a sandbox gets for one command with timeout t.
func TTL(p *policy.Policy, t time.Duration) time.Duration {
	return max(p.Timeout(), t) + p.Lifetime.TTLMargin
}
