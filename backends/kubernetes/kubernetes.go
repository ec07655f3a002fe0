// Package kubernetes runs sandboxes as pods through the Kubernetes API
// (k8s.io/client-go): the policy rendered as a pod the restricted Pod
// Security profile admits, its one container the holder (lifeline on its
// attach stream, TTL, staged copy), a NetworkPolicy denying every
// connection for a sandbox with no network, and each command run by the
// supervisor over the pod's exec stream, through holderexec like every
// other backend. Ownership is labels (selection) and annotations (owner
// host, pid, start, expiry) that Sweep judges; activeDeadlineSeconds is the
// cluster's backstop.
package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/kubernetes/kubecaps"
	"github.com/triage-sandbox/triage-sandbox/inside/seccompfilter"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Name is the backend's registry name.
const Name = kubecaps.Name

// Bounds of the API calls.
const (
	pingTimeout  = 10 * time.Second
	setupTimeout = 3 * time.Minute
	goneTimeout  = time.Minute
)

// execSeccomp is the filter set the supervisor loads before each command:
// the pod's seccomp is the runtime's default, not the sandbox's narrowed
// profile.
var execSeccomp = seccompfilter.Sets()[0]

// Capabilities is what every kubernetes sandbox enforces.
func Capabilities() []policy.Capability { return kubecaps.Capabilities() }

// Backend starts sandboxes as pods.
type Backend struct {
	host string
	// loader reads the kubeconfig from the usual places ($KUBECONFIG,
	// ~/.kube/config, in-cluster), once, on first use.
	loader clientcmd.ClientConfig
	once   sync.Once
	cfg    *rest.Config
	cli    *api
	defNS  string
	err    error
	// NodeName binds every pod to this node (tests without a scheduler).
	NodeName string
	// Notices takes the backend's one-line notices (nil: stderr).
	Notices io.Writer
	// proofs are the passed start-time network checks (proof.go).
	proofs *proofs
	// nodePids are the nodes' podPidsLimit as read (pids.go).
	nodePids *nodePids
	// skipFirstMoments leaves out the first moments' wait (firstmoments.go):
	// tests only, to show the window it closes.
	skipFirstMoments bool
}

// New makes the backend; the kubeconfig is read on first use.
func New(backends.Env) (backends.Backend, error) {
	host, _ := os.Hostname()
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	return &Backend{host: host, loader: clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}),
		proofs: newProofs(time.Now), nodePids: newNodePids(time.Now)}, nil
}

// NewForConfig makes the backend for a given client configuration.
func NewForConfig(cfg *rest.Config, namespace string) (*Backend, error) {
	cli, err := newAPI(cfg)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	b := &Backend{host: host, cfg: cfg, cli: cli, defNS: namespace, proofs: newProofs(time.Now), nodePids: newNodePids(time.Now)}
	b.once.Do(func() {})
	return b, nil
}

func (b *Backend) client() (*api, error) {
	b.once.Do(func() {
		if b.cfg, b.err = b.loader.ClientConfig(); b.err != nil {
			b.err = fmt.Errorf("no Kubernetes client configuration: %w; set KUBECONFIG or write ~/.kube/config", b.err)
			return
		}
		if b.defNS, _, b.err = b.loader.Namespace(); b.err != nil {
			return
		}
		b.cli, b.err = newAPI(b.cfg)
	})
	return b.cli, b.err
}

func (b *Backend) namespace(p *policy.Policy) string {
	if p != nil && p.Namespace != "" {
		return p.Namespace
	}
	if b.defNS != "" {
		return b.defNS
	}
	return "default"
}

// Name implements backends.Backend.
func (b *Backend) Name() string { return Name }

// Capabilities implements backends.Backend.
func (b *Backend) Capabilities() []policy.Capability { return Capabilities() }

// SelfPath implements backends.Backend: the image holds the binary there.
func (b *Backend) SelfPath() string { return launch.InitPath }

// Available implements backends.Backend: the API server answers.
func (b *Backend) Available(ctx context.Context) error {
	cli, err := b.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := cli.version(ctx); err != nil {
		return fmt.Errorf("cannot reach the Kubernetes API server at %s: %v; check KUBECONFIG and the cluster", b.cfg.Host, err)
	}
	return nil
}

// Ready implements backends.Backend. The image is the cluster's to pull;
// whether it holds the binary shows at the start.
func (b *Backend) Ready(ctx context.Context, _ *policy.Policy) error { return b.Available(ctx) }

// Describe implements backends.Backend.
func (b *Backend) Describe(ctx context.Context, p *policy.Policy) map[string]string {
	out := map[string]string{"image": p.Base.Image}
	cli, err := b.client()
	if err != nil {
		return out
	}
	out["namespace"] = b.namespace(p)
	if p.Runtime != "" {
		out["runtime_class"] = p.Runtime
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if raw, err := cli.version(ctx); err == nil {
		var v struct {
			GitVersion string `json:"gitVersion"`
		}
		if json.Unmarshal(raw, &v) == nil {
			out["engine"] = "kubernetes " + v.GitVersion
		}
	}
	return out
}

// Render implements backends.Backend: the pod, its NetworkPolicy and the
// exec of cmd, with placeholder ownership data.
func (b *Backend) Render(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
	r, err := Render(p, b.runInfo(p, backends.TTL(p, cmd.Timeout)))
	if err != nil {
		return nil, err
	}
	exec, err := RenderExec(p, cmd, r.Info.Traits())
	if err != nil {
		return nil, err
	}
	a := &Artifact{Pod: r.Pod, NetworkPolicy: r.NetworkPolicy, Exec: exec, NodePidsAtMost: pidsDemanded(p)}
	if agentSandbox(p) {
		c, err := RenderClaim(p, r.Info, 0)
		if err != nil {
			return nil, err
		}
		a.Pod, a.NetworkPolicy = nil, c.NetworkPolicy
		a.SandboxTemplate, a.SandboxWarmPool, a.SandboxClaim = c.Template, c.Pool, c.Claim
	}
	if copies, err := copiedDirs(p); err == nil && len(copies) > 0 {
		spec := packSpec(p, copies)
		a.Copy = &spec
	}
	return a, nil
}

// handler is the handler of RuntimeClass class as the API server has it
// ("" for none, or where it cannot be read: RuntimeClasses are the
// cluster's, and a namespace's user may not read them; the class's name
// then stands for it, and a class that does not exist refuses the pod).
func (b *Backend) handler(ctx context.Context, class string) string {
	if class == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	h, err := b.cli.runtimeClassHandler(ctx, class)
	if err != nil {
		return ""
	}
	return h
}

func (b *Backend) runInfo(p *policy.Policy, ttl time.Duration) RunInfo {
	var id [5]byte
	_, _ = rand.Read(id[:])
	pid := os.Getpid()
	return RunInfo{
		Name:      "triage-sandbox-" + string(p.Role) + "-" + hex.EncodeToString(id[:]),
		Namespace: b.namespace(p), ParentPID: pid, ParentStart: ownership.ProcessStart(pid),
		Host: b.host, ExpiresAt: time.Now().Add(ttl), RuntimeClass: p.Runtime, NodeName: b.NodeName,
	}
}

// Start implements backends.Backend: the NetworkPolicy first (the pod is
// never without it), then the pod; once its holder runs, the attach that
// is its lifeline, the staged copy, and the holder's word that it is
// ready.
func (b *Backend) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	if _, err := b.client(); err != nil {
		return nil, err
	}
	// Before anything of the sandbox's exists, and still cancellable.
	if err := b.proveDenyAll(ctx, p); err != nil {
		return nil, err
	}
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = backends.TTL(p, 0)
	}
	copies, err := copiedDirs(p)
	if err != nil {
		return nil, err
	}
	spool, size, err := spoolCopy(ctx, p, copies)
	if err != nil {
		return nil, err
	}
	if spool != nil {
		defer spool.Close()
	}
	ctx = context.WithoutCancel(ctx)
	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	info := b.runInfo(p, ttl)
	info.CopyBytes = size
	info.Handler = b.handler(setupCtx, p.Runtime)
	makePod := b.createPod
	if agentSandbox(p) {
		makePod = b.createClaimedPod
	}
	r, err := makePod(setupCtx, ctx, p, info)
	if err != nil {
		return nil, err
	}
	s := newSandbox(b, p, r)
	if spool != nil {
		s.copy = spool
	}
	if err := s.start(setupCtx, opts); err != nil {
		_ = s.Close(ctx)
		return nil, err
	}
	// Before the first command: the pod (ours, or the controller's for a
	// claim) is under its policy (firstmoments.go).
	if err := b.awaitDenied(setupCtx, p, r); err != nil {
		_ = s.Close(ctx)
		return nil, err
	}
	return s, nil
}

// createPod renders p's pod and makes it, its NetworkPolicy first; what
// was made is removed (under ctx, which outlives setupCtx) if it fails.
func (b *Backend) createPod(setupCtx, ctx context.Context, p *policy.Policy, info RunInfo) (*Rendered, error) {
	r, err := Render(p, info)
	if err != nil {
		return nil, err
	}
	if err := b.create(setupCtx, r); err != nil {
		return nil, errors.Join(err, b.remove(ctx, r))
	}
	return r, nil
}
