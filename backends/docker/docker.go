package docker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Name is the backend's registry name.
const Name = "docker"

// setupTimeout bounds create, attach and start together.
const setupTimeout = 60 * time.Second

// pingTimeout bounds every "is the daemon there" question.
const pingTimeout = 5 * time.Second

// capabilities: a container has its own namespaces, cgroup limits, a uid of
// its choice, masks, and an image as its root.
var capabilities = []policy.Capability{
	profiles.CapOwnLoopback, profiles.CapOutboundNAT, profiles.CapEgressProxy, profiles.CapPidNamespace,
	profiles.CapMemoryLimit, profiles.CapPidsLimit, profiles.CapCPULimit,
	profiles.CapUIDSwitch, profiles.CapMaskUnderMount, profiles.CapImageRoot,
	profiles.CapSyscallFilter, profiles.CapBoundedWrites, profiles.CapHostToolchain,
}

// Backend starts hardened containers as sandboxes.
type Backend struct {
	cli *client.Client
	// selfExe removes what the watcher beside the containers (watch.go)
	// lists; insideExe is that watcher, and is mounted as each holder
	// (backends.Env.Inside).
	selfExe   string
	insideExe string
	// watcher is the watcher of this process's containers: given
	// (WithWatcher), else made on first use (watcherOf).
	watcher     *Watcher
	watcherOnce sync.Once
	host        string
	engine      engineCache
	runtime     runtimeCache
	pings       pings
	starts      startsInFlight
	// raw asks what the SDK would decode whole (containerRuntime).
	raw     *http.Client
	rawOnce sync.Once
	// guess is the runtime a first start creates its container for while
	// the daemon says its default (guessedRuntime; tests change it).
	guess string
	// Adjust, when set, edits each create request before it is sent. Only
	// tests use it, to weaken a container and prove the selftest notices.
	Adjust func(*CreateRequest)
}

// New connects (lazily) to the daemon named by DOCKER_HOST or the default socket.
func New(env backends.Env) (backends.Backend, error) { return NewWith(env) }

// Option sets up a Backend made by NewWith.
type Option func(*Backend)

// WithWatcher makes the Backend list its containers with w, which a
// process hosting many Backends makes once (NewWatcher) and shares: one
// watcher process for all their containers.
func WithWatcher(w *Watcher) Option { return func(b *Backend) { b.watcher = w } }

// NewWith is New with options.
func NewWith(env backends.Env, opts ...Option) (backends.Backend, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	host, _ := os.Hostname()
	b := &Backend{cli: cli, selfExe: env.SelfExe, insideExe: env.Inside(), host: host, guess: guessedRuntime}
	for _, o := range opts {
		o(b)
	}
	return b, nil
}

// Name implements backends.Backend.
func (b *Backend) Name() string { return Name }

// Capabilities implements backends.Backend.
func (b *Backend) Capabilities() []policy.Capability { return Capabilities() }

// Capabilities is what every docker sandbox enforces.
func Capabilities() []policy.Capability { return append([]policy.Capability(nil), capabilities...) }

// SelfPath implements backends.Backend: the binary is mounted at InitPath.
func (b *Backend) SelfPath() string { return launch.InitPath }

// Describe implements backends.Backend. Podman's /version takes seconds
// (it asks the package manager), so the engine comes from its ping and
// the kernel only from Docker's.
func (b *Backend) Describe(ctx context.Context, p *policy.Policy) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	out := map[string]string{"image": p.Base.Image}
	eng, err := b.Engine(ctx)
	if err == nil {
		out["engine"] = eng.Version
		out["engine_name"] = eng.Name
		out["api"] = eng.API
	}
	if err == nil && !eng.IsPodman() {
		if v, err := b.cli.ServerVersion(ctx, client.ServerVersionOptions{}); err == nil {
			for _, c := range v.Components {
				if c.Name == "Engine" && c.Details["KernelVersion"] != "" {
					out["kernel"] = c.Details["KernelVersion"]
				}
			}
		}
	}
	if img, err := b.cli.ImageInspect(ctx, p.Base.Image); err == nil {
		out["image_id"] = img.ID
	}
	return out
}

// Client exposes the SDK client for tests.
func (b *Backend) Client() *client.Client { return b.cli }

// Available checks the daemon answers (negotiating the API version).
// Callers at the same time (a start's and its sweep's) share one ping:
// each of their own would wait on the client's negotiation, one round trip
// behind the other.
func (b *Backend) Available(ctx context.Context) error {
	b.pings.mu.Lock()
	c := b.pings.cur
	if c == nil {
		c = &pingCall{done: make(chan struct{})}
		b.pings.cur = c
		go func() {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pingTimeout)
			defer cancel()
			_, err := b.cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
			b.pings.mu.Lock()
			b.pings.cur = nil
			b.pings.mu.Unlock()
			c.err = err
			close(c.done)
		}()
	}
	b.pings.mu.Unlock()
	var err error
	select {
	case <-c.done:
		err = c.err
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return unreachable(b.cli.DaemonHost(), err, probeSocket(b.cli.DaemonHost()))
	}
	return nil
}

// pings is the ping in flight that callers of Available share.
type pings struct {
	mu  sync.Mutex
	cur *pingCall
}

// pingCall is one ping, its err there once done is closed.
type pingCall struct {
	done chan struct{}
	err  error
}

// Ready implements backends.Backend: the daemon answers and the policy's
// image exists.
func (b *Backend) Ready(ctx context.Context, p *policy.Policy) error {
	if err := b.Available(ctx); err != nil {
		return err
	}
	return b.EnsureImage(ctx, p.Base.Image)
}

// EnsureImage fails with the exact build command when the image is missing.
func (b *Backend) EnsureImage(ctx context.Context, image string) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	_, err := b.cli.ImageInspect(ctx, image)
	if err == nil {
		return nil
	}
	if cerrdefs.IsNotFound(err) {
		if image == profiles.DefaultImage {
			return fmt.Errorf("docker image %s not found; build it with `triage-sandbox image build` (offline: images/build-base.sh first, then `triage-sandbox image build --base %s`)",
				image, profiles.DefaultBaseImage)
		}
		return fmt.Errorf("docker image %s not found; build or load it, or set [sandbox] image", image)
	}
	return fmt.Errorf("inspecting image %s: %w", image, err)
}

// Render implements backends.Backend: the holder's create request (with
// placeholder ownership data) and the exec request for cmd.
func (b *Backend) Render(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
	create, err := Render(p, b.insideExe, b.runInfo(p, backends.TTL(p, cmd.Timeout)))
	if err != nil {
		return nil, err
	}
	exec, err := RenderExec(p, cmd)
	if err != nil {
		return nil, err
	}
	return &Artifact{Create: create, Exec: exec}, nil
}

func (b *Backend) runInfo(p *policy.Policy, ttl time.Duration) RunInfo {
	var id [6]byte
	_, _ = rand.Read(id[:])
	pid := os.Getpid()
	return RunInfo{
		Name:        "triage-sandbox-" + string(p.Role) + "-" + hex.EncodeToString(id[:]),
		ParentPID:   pid,
		ParentStart: ownership.ProcessStart(pid),
		Host:        b.host,
		ExpiresAt:   time.Now().Add(ttl),
	}
}

// Start implements backends.Backend: create, attach (the lifeline) and
// start the holder container. Set-up is not interrupted half-way: a create
// cancelled in flight could leave a container whose id we never learn.
func (b *Backend) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	if b.insideExe == "" {
		return nil, errors.New("docker backend: no triage-sandbox binary to mount as init")
	}
	if _, err := launch.EgressSource(p, true); err != nil {
		return nil, err
	}
	defer b.starts.begin()()
	// The watcher's process starts once the daemon answered its ping,
	// beside the render and the create, not between the create and the
	// start (Watcher.Warm); not before the ping, whose connection a fork
	// in flight holds up (syscall.ForkLock).
	w := b.watcherOf()
	var warmed chan struct{}
	warm := func() {
		warmed = make(chan struct{})
		go func() { defer close(warmed); w.Warm() }()
	}
	sb, err := b.startWarmed(ctx, p, opts, warm)
	if err != nil && warmed != nil {
		<-warmed
		w.Idle()
	}
	return sb, err
}

// startWarmed is Start; warm starts the watcher's process, called once
// the daemon answered.
func (b *Backend) startWarmed(ctx context.Context, p *policy.Policy, opts backends.StartOptions, warm func()) (backends.Sandbox, error) {
	known := b.knownRuntime(p)
	endAsk := phase.Begin(ctx, "start.ask")
	a, err := b.ask(ctx, p, func(e Engine) bool { return known == nil && !e.IsPodman() && b.guess != "" }, warm)
	if err != nil {
		return nil, err
	}
	endAsk()
	run := known
	if run == nil {
		if a.byInspect {
			run = withRuntimeName(p, b.guess)
		} else {
			if err := a.wait(); err != nil {
				return nil, err
			}
			run = a.withRT
		}
	}
	sb, err := b.startAs(ctx, run, opts, a, a.byInspect && known == nil)
	if errors.Is(err, errRuntimeGuess) {
		// The daemon's default runtime wants another sandbox than the one
		// guessed: build it again for the runtime the daemon gave.
		sb, err = b.startAs(ctx, a.withRT, opts, a, false)
	}
	if err != nil {
		// A create refused for a missing image: the answer that says how
		// to build it comes first.
		if aerr := a.wait(); aerr != nil {
			return nil, aerr
		}
		return nil, err
	}
	return sb, nil
}

// startAs renders the holder for p and starts it. With daemonPicks the
// create request names no runtime (the daemon gives the container its
// default) and p's is a guess of its traits; otherwise it names p's.
func (b *Backend) startAs(ctx context.Context, p *policy.Policy, opts backends.StartOptions, a *answers, daemonPicks bool) (backends.Sandbox, error) {
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = backends.TTL(p, 0)
	}
	rt := runtimes.Of(p.Runtime)
	endRender := phase.Begin(ctx, "start.render")
	req, err := render(p, rt, b.insideExe, b.runInfo(p, ttl))
	if err != nil {
		return nil, err
	}
	if daemonPicks {
		req.HostConfig.Runtime = ""
	}
	ov, ovWarning := overlays(req, p)
	dov, ovWarning := b.daemonFallback(ctx, req, p, ovWarning)
	if err := b.adapt(ctx, req, p, &ov, a.volumes); err != nil {
		_ = ov.Remove()
		_ = dov.remove(context.WithoutCancel(ctx))
		return nil, err
	}
	if eng, err := b.Engine(ctx); err == nil && ownLoopback(eng, req) {
		if err := withOwnLoopback(req); err != nil {
			_ = ov.Remove()
			_ = dov.remove(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	ln := withControl(rt, p, req)
	if b.Adjust != nil {
		b.Adjust(req)
	}
	endRender()
	confirm := func(id string) error { return b.confirm(ctx, a, p, id) }
	sb, err := b.start(context.WithoutCancel(ctx), p, rt, req, ln, opts, ov, confirm)
	if err != nil {
		_ = ov.Remove()
		_ = dov.remove(context.WithoutCancel(ctx))
		return nil, err
	}
	if dov != nil {
		sb.(*sandbox).dov = dov
		dov.release(context.WithoutCancel(ctx))
	}
	if ovWarning != "" {
		sb.(*sandbox).Warn(ovWarning)
	}
	return sb, nil
}

// guessedRuntime is Docker's own default runtime: a first start on a
// Docker engine renders its sandbox for that runtime's traits and lets
// the daemon give the container its default, then asks the created
// container which it got (/info, the other way to learn the default, is
// a slow round trip that keeps a busy daemon from the create beside it).
const guessedRuntime = "runc"

// errRuntimeGuess: the runtime the daemon gave a container wants another
// sandbox than the one rendered; the container was removed unstarted.
var errRuntimeGuess = errors.New("the daemon's default runtime is not the one guessed")

// answers are the daemon's answers a start waits for only before it
// starts its container: whether the image exists and, unless the created
// container is to say it (byInspect), which runtime is the default.
type answers struct {
	done      chan struct{}
	byInspect bool
	withRT    *policy.Policy // p with the runtime named
	err       error          // the first error, image first
	// volumes are the nosuid volumes' answers (askVolumes), which a
	// Docker engine's create waits for.
	volumes volumeAnswers
}

// wait returns once the daemon answered, with the first error.
func (a *answers) wait() error {
	<-a.done
	return a.err
}

// confirm says whether the container id, built for p, may start: the
// daemon answered, the image exists, and the container's runtime is p's,
// or, when the daemon gave it its default, one with p's traits (p then
// names it). A runtime with other traits sets a.withRT and returns
// errRuntimeGuess; a daemon that cannot say refuses the start.
func (b *Backend) confirm(ctx context.Context, a *answers, p *policy.Policy, id string) error {
	if err := a.wait(); err != nil {
		return err
	}
	if !a.byInspect {
		if a.withRT.Runtime != p.Runtime {
			return errRuntimeGuess
		}
		return nil
	}
	const fix = "; set [sandbox] runtime to the runtime the daemon runs containers under"
	ictx, cancel := context.WithTimeout(ctx, infoTimeout)
	defer cancel()
	got, err := b.containerRuntime(ictx, id)
	if err != nil {
		return fmt.Errorf("asking the Docker daemon which runtime the sandbox's container got: %w%s", err, fix)
	}
	if got == "" {
		return errors.New("the Docker daemon does not say which runtime the sandbox's container got" + fix)
	}
	if got != p.Runtime && !sameTraits(runtimes.Of(got), runtimes.Of(p.Runtime)) {
		a.withRT = withRuntimeName(p, got)
		return errRuntimeGuess
	}
	p.Runtime = got // p is this start's own copy
	b.rememberRuntime(got)
	return nil
}

// ask puts to the daemon at once the questions a start needs answered,
// each a round trip of its own: which engine it is (its raw /_ping, no
// version needed), then, once the API version is negotiated, whether the
// image exists and, unless byInspect says the created container will
// tell, which runtime runs the sandbox (/info, slow on a busy daemon), and
// what the policy's nosuid volumes are (askVolumes); afterPing runs then.
// It returns once the ping and the engine answered, which a create
// request needs; the rest comes on the answers. Errors come in that order: the
// ping, the image, the runtime, the engine.
func (b *Backend) ask(ctx context.Context, p *policy.Policy, byInspect func(Engine) bool, afterPing func()) (*answers, error) {
	var eng Engine
	var engErr error
	engDone := make(chan struct{})
	go func() { defer close(engDone); eng, engErr = b.Engine(ctx) }()
	if err := b.Available(ctx); err != nil {
		<-engDone
		return nil, err
	}
	// Once the API version is negotiated: asked before, their lookups
	// would each wait on the negotiation and hold up Available's own ping
	// behind another.
	a := &answers{done: make(chan struct{}), volumes: b.askVolumes(ctx, p)}
	afterPing()
	var imageErr, rtErr error
	var rest sync.WaitGroup
	rest.Add(1)
	go func() { defer rest.Done(); imageErr = b.EnsureImage(ctx, p.Base.Image) }()
	<-engDone
	a.byInspect = engErr == nil && byInspect(eng)
	if !a.byInspect {
		rest.Add(1)
		go func() { defer rest.Done(); a.withRT, rtErr = b.withRuntime(ctx, p) }()
	}
	go func() {
		rest.Wait()
		a.err = cmp.Or(imageErr, rtErr)
		close(a.done)
	}()
	if engErr != nil {
		if err := a.wait(); err != nil {
			return nil, err
		}
		return nil, b.stageErr(ctx, "asking the engine which it is", engErr)
	}
	return a, nil
}

// remove force-removes the container and returns once the daemon no longer
// knows it: "not found" means it is gone; "removal in progress" means
// AutoRemove is at work, so wait for it to finish.
func (b *Backend) remove(ctx context.Context, id string) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, err := b.cli.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if !isRemovalInProgress(err) {
			return err
		}
		select {
		case <-rctx.Done():
			return fmt.Errorf("container %s still being removed: %w", shortID(id), rctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stageErr explains a failed set-up step; when the daemon no longer
// answers, it says so rather than show a transport error.
func (b *Backend) stageErr(ctx context.Context, stage string, err error) error {
	if !b.answers(ctx) {
		return fmt.Errorf("lost the Docker daemon while %s (%v); once it is back it removes the sandbox, or run `triage-sandbox gc`", stage, err)
	}
	return fmt.Errorf("%s: %w", stage, err)
}

func (b *Backend) answers(ctx context.Context) bool {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := b.cli.Ping(pctx, client.PingOptions{})
	return err == nil
}

func isRemovalInProgress(err error) bool {
	return cerrdefs.IsConflict(err) || containsAny(err.Error(), "is already in progress", "removal of container")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// startsInFlight counts the starts between their first question to the
// daemon and their container's start, which a sweep lets go first
// (Sweep): its list of every container competed with their create and
// start for the daemon (a 2-core machine's list took 21 ms beside an
// 81 ms create).
type startsInFlight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while none runs
}

// begin counts a start in; the func it returns counts it out.
func (s *startsInFlight) begin() func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		s.idle = make(chan struct{})
	}
	s.n++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.n--; s.n == 0 {
			close(s.idle)
			s.idle = nil
		}
	}
}

// settled returns once no start is in flight, or after at most wait.
func (s *startsInFlight) settled(wait time.Duration) {
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
	case <-time.After(wait):
	}
}
