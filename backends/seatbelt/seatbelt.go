package seatbelt

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Name is the backend's registry name.
const Name = "seatbelt"

// capabilities are what a Seatbelt profile enforces, and only that:
//
//   - host_root: reads come from an allow-list of host roots; the rest of
//     the host, the caller's home included, is denied by (deny default).
//   - mask_under_mount: credential paths and sockets under a readable root
//     are denied by rules placed after every allow.
//   - egress_proxy: a network allow-list is rendered as outbound to the
//     run's egress proxy alone, one port of the host's loopback that asks
//     for a per-run secret (see the package documentation); own_loopback
//     stays a weaker mode to accept, as the host's loopback is shared.
//
// What it does not give, so a policy needing it is refused unless the
// config accepts the weaker mode ([sandbox] accept_weaker):
//
//   - own_loopback: the sandbox shares the host's network; "localhost" is
//     every address of this host. Host ports listening at start are denied,
//     services started later are not.
//   - outbound_nat: with the network on, it is the host's network.
//   - pid_namespace: host processes stay visible (signals and process
//     information are limited to the sandbox's own).
//   - memory_limit, pids_limit, cpu_limit: Seatbelt has no resource limits.
//   - uid_switch: the command runs as the caller.
//   - bounded_writes: writable paths are written on the host directly, with
//     no size or inode bound and no staging.
//   - image_root, syscall_filter: Linux container mechanisms.
var capabilities = []policy.Capability{profiles.CapHostRoot, profiles.CapMaskUnderMount, profiles.CapEgressProxy}

// Capabilities is what every seatbelt sandbox enforces.
func Capabilities() []policy.Capability { return append([]policy.Capability(nil), capabilities...) }

// Options are choices a library user makes for the backend.
type Options struct {
	// OptIns open service families that are denied by default (see
	// OptIns()); each is shown in the rendered profile with its risk.
	OptIns []string
	// StateDir holds the per-run directories; "" is TMPDIR's
	// triage-sandbox-seatbelt-UID.
	StateDir string
}

// Backend runs commands under sandbox-exec on macOS; it renders anywhere.
type Backend struct {
	selfExe string
	opts    Options
	canon   Canonicalizer
}

// New makes the backend with the default options. It works on every OS:
// rendering needs no macOS, running does.
func New(env backends.Env) (backends.Backend, error) { return NewWithOptions(env, Options{}) }

// NewWithOptions makes the backend with opts.
func NewWithOptions(env backends.Env, opts Options) (*Backend, error) {
	if err := checkOptIns(opts.OptIns); err != nil {
		return nil, err
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir()
	}
	return &Backend{selfExe: env.SelfExe, opts: opts, canon: HostResolver()}, nil
}

// DefaultStateDir is where per-run directories go: the caller's own temp
// directory (per user on macOS), never a credential or state path.
func DefaultStateDir() string {
	return filepath.Join(os.TempDir(), "triage-sandbox-seatbelt-"+strconv.Itoa(os.Getuid()))
}

// Name implements backends.Backend.
func (b *Backend) Name() string { return Name }

// Capabilities implements backends.Backend.
func (b *Backend) Capabilities() []policy.Capability { return Capabilities() }

// SelfPath implements backends.Backend: the host binary, which the profile
// makes readable; there is no mount.
func (b *Backend) SelfPath() string { return b.selfExe }

// Ready implements backends.Backend: nothing beyond Available (no image).
func (b *Backend) Ready(ctx context.Context, p *policy.Policy) error { return b.Available(ctx) }

// Render implements backends.Backend: what a command would run under now,
// with a placeholder profile path and run directory, and for a network
// allow-list RenderProxyPort in place of the port a run's proxy takes.
func (b *Backend) Render(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
	in := Input{Canon: b.canon, RunID: "render", RunDir: filepath.Join(b.opts.StateDir, "run-render"),
		Self: b.selfExe, OptIns: b.opts.OptIns}
	in.HostPorts, _ = listeningPorts(context.Background())
	if p.Network.Mode == policy.NetworkProxy && p.Network.HostProxy == nil {
		cp := *p
		cp.Network.HostProxy = &policy.HostProxy{Port: RenderProxyPort}
		p = &cp
	}
	return Render(p, cmd, in)
}

// RenderProxyPort stands for the run's proxy port in a rendering that is
// not run (`render`): each run's proxy takes a free port of the host's
// loopback. It is the forwarder's port of the Linux backends.
const RenderProxyPort = 3128
