package oci

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holder"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/backends/oci/netup"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Name is the backend's registry name.
const Name = "oci"

// Runtimes are the OCI runtimes this backend drives, in the order tried
// when the config names none. runsc is gVisor: a user-space kernel.
var runtimeNames = []string{"runc", "crun", "runsc"}

// capabilities: what a bare OCI runtime gives from the same bundle. A
// route out needs a NAT'd namespace the runtime does not make.
var capabilities = []policy.Capability{
	profiles.CapOwnLoopback, profiles.CapEgressProxy, profiles.CapPidNamespace, profiles.CapMemoryLimit, profiles.CapPidsLimit,
	profiles.CapCPULimit, profiles.CapUIDSwitch, profiles.CapMaskUnderMount, profiles.CapImageRoot,
	profiles.CapSyscallFilter, profiles.CapBoundedWrites, profiles.CapHostToolchain,
}

// Capabilities is what every oci sandbox enforces.
func Capabilities() []policy.Capability { return append([]policy.Capability(nil), capabilities...) }

// RootProvider gives the image's root filesystem, unpacked once and
// shared; release ends this sandbox's use of it.
type RootProvider interface {
	Root(ctx context.Context, image string) (path string, release func(), err error)
	// Has reports whether image is unpacked already or can be.
	Check(ctx context.Context, image string) error
}

// IDRoots is a RootProvider that names the image ID of the root it leased
// and leases a cached root by ID alone, without the daemon: a start then
// begins on the root the image had last time while the daemon is asked
// which it has now (see Backend.Start).
type IDRoots interface {
	RootWithID(ctx context.Context, image string) (path, id string, release func(), err error)
	RootOfID(ctx context.Context, id string) (path string, release func(), err error)
}

// Backend runs the rendered bundle with an OCI runtime, no daemon.
type Backend struct {
	// selfExe is the static binary mounted as the holder (env.Inside()).
	selfExe string
	roots   RootProvider
	// stateDir holds the runtime's state (--root) and one bundle directory
	// per sandbox with its ownership record.
	stateDir string
}

// New makes the backend. roots may be nil until the image cache is wired
// (Available then says so).
func New(env backends.Env, roots RootProvider) (*Backend, error) {
	return &Backend{selfExe: env.Inside(), roots: roots, stateDir: defaultStateDir()}, nil
}

func defaultStateDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && os.Geteuid() != 0 {
		return filepath.Join(d, "triage-sandbox", "oci")
	}
	return "/run/triage-sandbox/oci"
}

// Name implements backends.Backend.
func (b *Backend) Name() string { return Name }

// Capabilities implements backends.Backend.
func (b *Backend) Capabilities() []policy.Capability { return Capabilities() }

// SelfPath implements backends.Backend.
func (b *Backend) SelfPath() string { return launch.InitPath }

// runtimePath finds the runtime the policy names (p.Runtime), or the
// first one installed.
func runtimePath(name string) (string, error) {
	names := runtimeNames
	if name != "" {
		if !contains(runtimeNames, name) {
			return "", fmt.Errorf("[sandbox] runtime %q: the oci backend drives %s", name, strings.Join(runtimeNames, ", "))
		}
		names = []string{name}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no OCI runtime found (%s): install one (apt-get install runc), or use the docker backend", strings.Join(names, ", "))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Available implements backends.Backend.
func (b *Backend) Available(ctx context.Context) error {
	if _, err := runtimePath(""); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("the oci backend needs root here (rootless runc needs a user namespace and cgroup delegation this backend does not set up yet); run as root or use the docker backend")
	}
	if b.roots == nil {
		return errors.New("the oci backend has no image cache configured")
	}
	return nil
}

// Ready implements backends.Backend.
func (b *Backend) Ready(ctx context.Context, p *policy.Policy) error {
	if err := b.Available(ctx); err != nil {
		return err
	}
	if _, err := runtimePath(p.Runtime); err != nil {
		return err
	}
	return b.roots.Check(ctx, p.Base.Image)
}

// Render implements backends.Backend.
func (b *Backend) Render(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
	s, err := Render(p, cmd, b.selfExe)
	return s, err
}

// Describe implements backends.Backend.
func (b *Backend) Describe(ctx context.Context, p *policy.Policy) map[string]string {
	out := map[string]string{"image": p.Base.Image}
	if rt, err := runtimePath(p.Runtime); err == nil {
		out["runtime"] = filepath.Base(rt)
		if v, err := exec.CommandContext(ctx, rt, "--version").Output(); err == nil {
			out["runtime_version"] = strings.TrimSpace(strings.SplitN(string(v), "\n", 2)[0])
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		out["kernel"] = strings.TrimSpace(string(b))
	}
	return out
}

// owner is the ownership record beside each bundle: a sweep judges by it
// alone.
type owner struct {
	PID       int       `json:"pid"`
	Start     string    `json:"start"`
	ExpiresAt time.Time `json:"expires_at"`
	Runtime   string    `json:"runtime"`
	Role      string    `json:"role"`
	Policy    string    `json:"policy_hash"`
}

func (b *Backend) runtimeRoot() string { return filepath.Join(b.stateDir, "runtime") }
func (b *Backend) bundles() string     { return filepath.Join(b.stateDir, "bundles") }

// newBundleDir makes a new bundle directory, once the bundles' and the
// runtime's state directories are the caller's alone.
func (b *Backend) newBundleDir(id string) (string, error) {
	for _, d := range []string{b.bundles(), b.runtimeRoot()} {
		if err := hostfs.PrivateDir(d); err != nil {
			return "", fmt.Errorf("the oci backend's state: %w", err)
		}
	}
	dir := filepath.Join(b.bundles(), id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("making the bundle: %w", err)
	}
	return dir, nil
}

// Start implements backends.Backend.
//
// The image's root is asked of the daemon on every start, but that answer
// is not waited for first: the start begins on the root the image had at
// the last start (remembered in the state directory, leased from the
// cache without the daemon) and the answer is checked before Start
// returns, so no command ever runs on a root the image no longer names. A
// root the image moved away from costs a second start; a daemon that does
// not answer fails the start as before.
func (b *Backend) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	// encoding/json builds its encoder for each type on first use: half a
	// millisecond for config.json's types (specFile). Built here, beside
	// the spec's rendering and the bundle directory's making, the bundle's
	// write finds it ready (a write that comes first waits for it: json
	// builds each type's encoder once).
	go warmSpecEncoder()
	if err := b.Available(ctx); err != nil {
		return nil, err
	}
	if b.selfExe == "" {
		return nil, errors.New("the oci backend needs the static triage-sandbox binary")
	}
	if _, err := launch.EgressSource(p, true); err != nil {
		return nil, err
	}
	rt, err := runtimePath(p.Runtime)
	if err != nil {
		return nil, err
	}
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = backends.TTL(p, p.Timeout())
	}
	image := p.Base.Image
	// The daemon is asked once: beside the bundle's making when no root is
	// remembered; else once the runtime is spawned (onSpawn), the answer
	// being needed only after the holder is ready, so its client's work
	// takes no CPU from the start's before the spawn; at once when the
	// remembered root cannot be leased.
	lease := sync.OnceValue(func() func() (leasedRoot, error) { return b.leaseRoot(ctx, image) })
	// The remembered ID is read before the daemon's answer can replace it.
	guess, remembered := b.rememberedRoot(ctx, image, func() { lease() })
	if !remembered {
		lease()
	}
	var guessed *leasedRoot
	s, err := b.startOn(ctx, p, rt, ttl, opts, func() (leasedRoot, error) {
		if g, ok := guess(); ok {
			guessed = &g
			return g, nil
		}
		return lease()()
	}, func() { lease() })
	if guessed == nil {
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	endConfirm := phase.Begin(ctx, "start.rootfs-confirm")
	actual, lerr := lease()()
	endConfirm()
	switch {
	case lerr != nil:
		if s != nil {
			_ = s.Close(context.WithoutCancel(ctx))
		}
		return nil, lerr
	case actual.id == guessed.id:
		actual.release()
		if err != nil {
			return nil, err
		}
		return s, nil
	default:
		// The image names another root now: start again on it.
		if s != nil {
			_ = s.Close(context.WithoutCancel(ctx))
		}
		s, err := b.startOn(ctx, p, rt, ttl, opts, func() (leasedRoot, error) { return actual, nil }, nil)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// leasedRoot is an image's root, leased until release.
type leasedRoot struct {
	path, id string
	release  func()
}

// startOn makes the bundle and starts it on the root root gives (asked
// for once the rest of the bundle is made), calling onSpawn (when not nil)
// just before the runtime's spawn. The root's lease is the sandbox's from
// then on, or released on an error.
func (b *Backend) startOn(ctx context.Context, p *policy.Policy, rt string, ttl time.Duration, opts backends.StartOptions, root func() (leasedRoot, error), onSpawn func()) (*sandbox, error) {
	spec, dir, ovWarning, err := b.prepareBundle(ctx, p, rt, ttl)
	r, lerr := root()
	if err == nil && lerr != nil {
		err = lerr
	}
	if err == nil {
		spec.Root.Path = r.path
		endWrite := phase.Begin(ctx, "start.bundle-write")
		if err = writeSpec(filepath.Join(dir, "config.json"), spec); err != nil {
			err = fmt.Errorf("writing the bundle: %w", err)
		}
		endWrite()
	}
	if err != nil {
		if r.release != nil {
			r.release()
		}
		if dir != "" {
			_ = removeBundle(dir)
		}
		return nil, err
	}
	s := &sandbox{b: b, p: p, id: filepath.Base(dir), dir: dir, runtime: rt, traits: traitsFor(rt, p), release: r.release, Base: holder.New(p, holder.Config{Setup: startTimeout})}
	if ovWarning != "" {
		s.Warn(ovWarning)
	}
	s.discarded = ovWarning == "" && overlay.Wanted(p)
	// The spawn is next: what the caller kept for after it may go.
	if onSpawn != nil {
		onSpawn()
	}
	if err := s.start(ctx, opts); err != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

// leaseRoot starts leasing image's root (asking the daemon which it is)
// and returns the wait for it. With IDRoots, the ID it finds is
// remembered for the next start (rememberedRoot).
func (b *Backend) leaseRoot(ctx context.Context, image string) func() (leasedRoot, error) {
	type leased struct {
		r   leasedRoot
		err error
	}
	done := make(chan leased, 1)
	go func() {
		defer phase.Begin(ctx, "start.rootfs")()
		var l leased
		if ir, ok := b.roots.(IDRoots); ok {
			l.r.path, l.r.id, l.r.release, l.err = ir.RootWithID(ctx, image)
			if l.err == nil {
				b.rememberRoot(image, l.r.id)
			}
		} else {
			l.r.path, l.r.release, l.err = b.roots.Root(ctx, image)
		}
		if l.err != nil {
			l.err = fmt.Errorf("the image's root filesystem: %w", l.err)
		}
		done <- l
	}()
	return func() (leasedRoot, error) {
		l := <-done
		return l.r, l.err
	}
}

// rootIDFile is where image's root ID is remembered: in a directory of
// the caller's alone, or nowhere.
func (b *Backend) rootIDFile(image string) (string, bool) {
	dir := filepath.Join(b.stateDir, "image-id")
	if hostfs.PrivateDir(dir) != nil {
		return "", false
	}
	sum := sha256.Sum256([]byte(image))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])), true
}

// rememberedRoot reads the ID image's root had at the last start and
// starts leasing that root from the cache, without the daemon, calling
// missed if that fails; it returns the wait for it (false when there is
// none), and whether an ID was remembered.
func (b *Backend) rememberedRoot(ctx context.Context, image string, missed func()) (func() (leasedRoot, bool), bool) {
	none := func() (leasedRoot, bool) { return leasedRoot{}, false }
	ir, ok := b.roots.(IDRoots)
	if !ok {
		return none, false
	}
	path, ok := b.rootIDFile(image)
	if !ok {
		return none, false
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return none, false
	}
	id := strings.TrimSpace(string(raw))
	done := make(chan *leasedRoot, 1)
	go func() {
		defer phase.Begin(ctx, "start.rootfs-remembered")()
		root, release, err := ir.RootOfID(ctx, id)
		if err != nil {
			missed()
			done <- nil
			return
		}
		done <- &leasedRoot{path: root, id: id, release: release}
	}()
	return func() (leasedRoot, bool) {
		if r := <-done; r != nil {
			return *r, true
		}
		return leasedRoot{}, false
	}, true
}

// rememberRoot keeps id as image's root ID, for the next start; a write
// only when it changed.
func (b *Backend) rememberRoot(image, id string) {
	path, ok := b.rootIDFile(image)
	if !ok {
		return
	}
	if raw, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(raw)) == id {
		return
	}
	_ = hostfs.WriteFileReplace(path, []byte(id+"\n"))
}

// traitsFor is the runtime's traits for p: a sandbox whose holder must
// reach the allow-list's proxy through its bound socket gets the flags
// that let it connect (gVisor's), and no other sandbox does.
func traitsFor(rt string, p *policy.Policy) runtimes.Traits {
	t := runtimes.Of(rt)
	if p.Network.Mode == policy.NetworkProxy && !t.BindsSocketFile {
		t.Flags = append(t.Flags, t.SocketFlags...)
		t.BindsSocketFile = true
	}
	return t
}

// prepareBundle makes the bundle directory with its ownership record,
// overlays and network namespace, and the spec its config.json is to hold
// (without the root's path); the spec is rendered beside the directory's
// making. A dir it returns, with or without an error, is the caller's to
// remove.
func (b *Backend) prepareBundle(ctx context.Context, p *policy.Policy, rt string, ttl time.Duration) (*bundleSpec, string, string, error) {
	traits := traitsFor(rt, p)
	type rendered struct {
		spec *bundleSpec
		err  error
	}
	specc := make(chan rendered, 1)
	go func() {
		spec, err := b.renderSpec(ctx, p, rt, traits, ttl)
		specc <- rendered{spec, err}
	}()
	endDir := phase.Begin(ctx, "start.bundle-dir")
	dir, err := b.newBundleDir(newID())
	if err == nil {
		// The record first: a sweep judges the bundle by it alone.
		rec := owner{PID: os.Getpid(), Start: ownership.ProcessStart(os.Getpid()), ExpiresAt: time.Now().Add(ttl).UTC(),
			Runtime: rt, Role: string(p.Role), Policy: p.ShortHash()}
		if err = writeJSON(filepath.Join(dir, "owner.json"), rec); err != nil {
			err = fmt.Errorf("writing the bundle: %w", err)
		}
	}
	if err == nil {
		err = writeHosts(dir)
	}
	endDir()
	var ov *overlay.Set
	var ovWarning, netns string
	if err == nil {
		endOverlay := phase.Begin(ctx, "start.overlays")
		ov, ovWarning = overlay.For(filepath.Join(dir, overlayDir), p)
		endOverlay()
		endNetns := phase.Begin(ctx, "start.netns")
		netns, err = ownLoopback(traits, dir)
		endNetns()
	}
	r := <-specc
	if err == nil {
		err = r.err
	}
	if err != nil {
		return nil, dir, "", err
	}
	bindOverlays(r.spec.Spec, ov)
	joinNetns(r.spec.Spec, netns)
	bindHosts(r.spec.Spec, dir)
	if err := coverSockets(r.spec.Spec, dir, p, traits, ov); err != nil {
		return nil, dir, "", err
	}
	return r.spec, dir, ovWarning, nil
}

// coverSockets hides the policy's masked sockets where the runtime takes
// no masked paths and connects to host sockets (gVisor serving an
// allow-list: --host-uds=open), and cannot mount over a socket either: the
// bind that holds each such socket comes from a view of its source made
// here, private to the host's mount namespace, with the bundle's empty
// MaskFile bound over the socket (overlay.Set.CoverView), in the bundle's
// overlay set ov (made here when nil), so whatever removes the bundle
// detaches the views before deleting it. The host's own directory keeps
// its socket.
func coverSockets(spec *specs.Spec, dir string, p *policy.Policy, rt runtimes.Traits, ov *overlay.Set) error {
	if !rt.IgnoresMaskedPaths || !rt.BindsSocketFile {
		return nil
	}
	under := map[int][]string{} // a mount's index: the sockets in it, as host paths under its source
	for _, m := range p.Masked {
		fi, err := os.Lstat(m)
		if err != nil || fi.Mode()&fs.ModeSocket == 0 {
			continue
		}
		at := -1
		for i, mnt := range spec.Mounts {
			if mnt.Type == "bind" && strings.HasPrefix(m, mnt.Destination+"/") && (at < 0 || len(mnt.Destination) > len(spec.Mounts[at].Destination)) {
				at = i
			}
		}
		if at < 0 {
			continue // not from a host directory: no host socket
		}
		rel := strings.TrimPrefix(m, spec.Mounts[at].Destination+"/")
		under[at] = append(under[at], filepath.Join(spec.Mounts[at].Source, rel))
	}
	if len(under) == 0 {
		return nil
	}
	set := ov
	if set == nil {
		var err error
		if set, err = overlay.NewSet(filepath.Join(dir, overlayDir)); err != nil {
			return fmt.Errorf("hiding the sockets under the mounts from runtime %s: %w", rt.Name, err)
		}
	}
	for at, sockets := range under {
		view, err := set.CoverView(strconv.Itoa(at), spec.Mounts[at].Source, filepath.Join(dir, MaskFile), sockets)
		if err != nil {
			return fmt.Errorf("hiding the sockets under %s from runtime %s: %w", spec.Mounts[at].Destination, rt.Name, err)
		}
		spec.Mounts[at].Source = view
	}
	return nil
}

// writeHosts writes the bundle's hosts file (HostsFile) and its empty
// MaskFile, read-only for everyone.
func writeHosts(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, HostsFile), []byte(HostsContent), 0o644); err != nil {
		return fmt.Errorf("writing the bundle's hosts file: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, MaskFile), nil, 0o444); err != nil {
		return fmt.Errorf("writing the bundle's mask file: %w", err)
	}
	return nil
}

// bindHosts makes the hosts file's and the mask file's mount sources
// absolute: runc resolves a relative one against the bundle, but not every
// runtime is known to.
func bindHosts(spec *specs.Spec, dir string) {
	for i, m := range spec.Mounts {
		if m.Type == "bind" && (m.Source == HostsFile || m.Source == MaskFile) {
			spec.Mounts[i].Source = filepath.Join(dir, m.Source)
		}
	}
}

// bundleSpec is a bundle's spec with its seccomp filter as the JSON
// config.json holds (the spec's own Linux.Seccomp is nil): the profile
// resolved ahead is written as it is, never decoded (seccompJSON).
type bundleSpec struct {
	*specs.Spec
	filter json.RawMessage
}

// renderSpec is the bundle's spec for p as runtime rt runs it.
func (b *Backend) renderSpec(ctx context.Context, p *policy.Policy, rt string, traits runtimes.Traits, ttl time.Duration) (*bundleSpec, error) {
	endSpec := phase.Begin(ctx, "start.spec")
	defer endSpec()
	hold := HoldSpec(p, ttl)
	if traits.PassesFDs {
		// The holder serves commands on the channel the runtime passes as fd 3.
		hold.ControlFD = 3
	}
	runAs, err := launch.RunAs(p, traits.HelpersStartAsRoot)
	if err != nil {
		return nil, err
	}
	hold.RunAs = runAs
	spec, err := bundleNoFilter(p, b.selfExe, hold)
	if err != nil {
		return nil, err
	}
	// Resolved for the spec's capabilities before the runtime's changes
	// below, as BundleHold resolves it.
	filter, err := seccompJSON(spec)
	if err != nil {
		return nil, err
	}
	// Runtimes refuse a newer spec version than they know (crun 1.8: "unknown
	// version specified"); the bundle uses nothing newer than 1.0.
	if v := b.runtimeSpecVersion(ctx, rt); v != "" {
		spec.Version = v
	}
	adaptToRuntime(spec.Process, spec.Linux.Resources, traits, p)
	return &bundleSpec{Spec: spec, filter: filter}, nil
}

// specFile is what config.json holds of a bundleSpec: the fields this
// backend sets, the filter as JSON. Marshalling it builds json's encoders
// of these types only, not those of every platform's types (Windows,
// Solaris, VM, z/OS, hooks) a specs.Spec reaches: a third of the first
// marshal's cost.
type specFile struct {
	Version     string            `json:"ociVersion"`
	Process     *specs.Process    `json:"process,omitempty"`
	Root        *specs.Root       `json:"root,omitempty"`
	Hostname    string            `json:"hostname,omitempty"`
	Mounts      []specs.Mount     `json:"mounts,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Linux       *linuxFile        `json:"linux,omitempty"`
}

// linuxFile is specs.Linux with the filter as JSON: the outer field
// hides the embedded one of the same name.
type linuxFile struct {
	*specs.Linux
	Seccomp json.RawMessage `json:"seccomp,omitempty"`
}

// fullSpecFile is config.json of a spec that sets more than specFile has.
type fullSpecFile struct {
	*specs.Spec
	Linux *linuxFile `json:"linux,omitempty"`
}

// specJSON is config.json's content for s. It refuses a spec without a
// filter, or with one of its own besides: the filter written is always
// the one resolved for it.
func specJSON(s *bundleSpec) ([]byte, error) {
	if s.Linux == nil || len(s.filter) == 0 || s.Linux.Seccomp != nil {
		return nil, errors.New("the bundle's spec has no seccomp filter as JSON (or a second one): not written")
	}
	lf := &linuxFile{Linux: s.Linux, Seccomp: s.filter}
	rest := *s.Spec
	rest.Version, rest.Process, rest.Root, rest.Hostname, rest.Mounts, rest.Annotations, rest.Linux = "", nil, nil, "", nil, nil, nil
	if !reflect.ValueOf(rest).IsZero() {
		return json.Marshal(&fullSpecFile{Spec: s.Spec, Linux: lf})
	}
	return json.Marshal(&specFile{Version: s.Version, Process: s.Process, Root: s.Root, Hostname: s.Hostname,
		Mounts: s.Mounts, Annotations: s.Annotations, Linux: lf})
}

// writeSpec writes s as the bundle's config.json at path.
func writeSpec(path string, s *bundleSpec) error {
	b, err := specJSON(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// warmSpecEncoder has encoding/json build its encoders of config.json's
// types: building a struct's encoder builds those of every type in it, so
// an empty specFile reaches them all.
func warmSpecEncoder() { _, _ = json.Marshal(&specFile{}) }

// adaptToRuntime changes what a runtime enforces differently (proc may be
// the holder's or an exec's process; res nil for an exec): under gVisor,
// the process limits of runtimes.GVisorLimits, and the helper started as
// root with what it needs to take the sandbox identity itself
// (HelpersStartAsRoot; the identity is in its spec: launch.RunAs).
func adaptToRuntime(proc *specs.Process, res *specs.LinuxResources, rt runtimes.Traits, p *policy.Policy) {
	if rt.HelpersStartAsRoot {
		proc.User = specs.User{}
		caps := slices.Clone(launch.IdentityCaps)
		proc.Capabilities = &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}
	}
	nproc, host, ok := runtimes.GVisorLimits(rt, p)
	if !ok {
		return
	}
	n := uint64(nproc)
	proc.Rlimits = append(proc.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: n, Soft: n})
	if res != nil && res.Pids != nil {
		res.Pids.Limit = &host
	}
}

// netnsFile is where a bundle's network namespace is kept (bound).
const netnsFile = "netns"

// ownLoopback makes the container's network namespace beforehand, in the
// bundle, with lo up (runc leaves a new one's lo down, and the sandbox
// cannot raise it), and returns its path. A runtime with its own network
// stack (gVisor's, with --network=none) needs none: "".
func ownLoopback(rt runtimes.Traits, dir string) (string, error) {
	if rt.OwnNetworkStack {
		return "", nil
	}
	path := filepath.Join(dir, netnsFile)
	if err := netup.Create(path); err != nil {
		return "", fmt.Errorf("the sandbox's network namespace: %w", err)
	}
	return path, nil
}

// joinNetns has the container join the network namespace at path ("":
// a new one, the runtime's).
func joinNetns(spec *specs.Spec, path string) {
	if path == "" {
		return
	}
	for i, ns := range spec.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			spec.Linux.Namespaces[i].Path = path
		}
	}
}

// overlayDir is where a bundle's overlays are (package overlay).
const overlayDir = "overlays"

// bindOverlays binds each discard mount's merged directory, writable,
// where its read-only host directory was.
func bindOverlays(spec *specs.Spec, ov *overlay.Set) {
	for i, m := range spec.Mounts {
		if src, rw := ov.Source(m.Destination); rw && m.Type == "bind" && m.Source == m.Destination {
			spec.Mounts[i].Source = src
			spec.Mounts[i].Options = []string{"rbind", "rprivate", "rw", "nosuid", "nodev"}
		}
	}
}

// removeBundle releases a bundle's network namespace and overlays and
// deletes it.
func removeBundle(dir string) error {
	if err := netup.Remove(filepath.Join(dir, netnsFile)); err != nil {
		return err
	}
	if err := overlay.RemoveAt(filepath.Join(dir, overlayDir)); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

func newID() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return "triage-sandbox-" + hex.EncodeToString(r[:])
}

func writeJSON(path string, v any) error {
	// Compact: only runtimes and sweeps read it, and a spec's indentation
	// costs a millisecond on every start.
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Sweep implements backends.Backend: bundles whose owner is gone or whose
// lifetime passed are killed and deleted, by their ownership record only.
func (b *Backend) Sweep(ctx context.Context) ([]string, error) {
	stale, err := ownership.StaleDirs(b.bundles(), "owner.json", nil, func(rec owner) bool {
		return ownership.OwnerAlive(rec.PID, rec.Start) && time.Now().Before(rec.ExpiresAt)
	})
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, s := range stale {
		rt := s.Record.Runtime
		if rt == "" {
			rt, _ = runtimePath("")
		}
		if rt != "" {
			_ = exec.CommandContext(ctx, rt, "--root", b.runtimeRoot(), "kill", "--all", s.Name, "KILL").Run()
			_ = exec.CommandContext(ctx, rt, "--root", b.runtimeRoot(), "delete", "--force", s.Name).Run()
		}
		if err := removeBundle(s.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, s.Name)
	}
	return removed, errors.Join(errs...)
}

// runtimeSpecVersion is the OCI spec version the runtime reports
// ("spec: 1.0.2-dev"), or "". Asking costs an exec on every cold run, so
// the answer is kept in the state directory, keyed by the runtime
// binary's identity (path, size, modification time): an upgrade asks again.
func (b *Backend) runtimeSpecVersion(ctx context.Context, rt string) string {
	fi, err := os.Stat(rt)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", rt, fi.Size(), fi.ModTime().UnixNano()))
	cache := filepath.Join(b.stateDir, "spec-version", hex.EncodeToString(sum[:8]))
	// The cache is trusted only in a directory of the caller's alone.
	cached := hostfs.PrivateDir(filepath.Dir(cache)) == nil
	if cached {
		if v, err := os.ReadFile(cache); err == nil {
			return strings.TrimSpace(string(v))
		}
	}
	v := askSpecVersion(ctx, rt)
	if v != "" && cached {
		_ = hostfs.WriteFileReplace(cache, []byte(v+"\n"))
	}
	return v
}

// askSpecVersion runs `runtime --version` and reads its "spec:" line.
func askSpecVersion(ctx context.Context, rt string) string {
	out, err := exec.CommandContext(ctx, rt, "--version").Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "spec: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
