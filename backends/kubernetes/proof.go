package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// The start-time proof that the cluster enforces the deny-all policy
// (own_loopback): before the first loopback-only sandbox of a namespace,
// a prober pod under a deny-all NetworkPolicy of its own (rendered as a
// sandbox's, from the same policy) tries TCP connects to a listener pod
// it starts beside it, to the API server's service address and to the
// cluster DNS service; a control pod no policy selects must reach the
// listener, or the check cannot tell and refuses. Every pod runs the
// sandbox image's own binary (its probe ops tcp_serve and tcp_connect).
//
// The listener is a target only: no policy of ours selects it (the
// deny-all covers the prober's egress, and its ingress), so the control
// reaches it on a cluster that enforces, and a namespace whose own
// policies block it fails closed.
const (
	// proofTTL is how long a passed proof stands for a namespace and API
	// server in this process (a keeper is a process too). A cluster's
	// network plugin is changed by its administrators, rarely; ten minutes
	// bounds how long a start trusts a plugin that was removed meanwhile,
	// and costs one proof (a few seconds, three pods) per ten minutes of
	// starts.
	proofTTL = 10 * time.Minute
	// proofBound bounds the whole proof: pods started, probes run.
	proofBound = 2 * time.Minute
	// proofSettle is how long the prober keeps trying while a target is
	// reached: the policy controller programs a new pod's rules after the
	// pod runs.
	proofSettle = 10 * time.Second
	proofPort   = "8080"
)

// proofs caches passed proofs per API server and namespace.
type proofs struct {
	mu  sync.Mutex
	now func() time.Time
	by  map[string]*proofEntry
}

// proofEntry serialises the proofs of one key: concurrent first starts
// of a namespace run one proof.
type proofEntry struct {
	mu     sync.Mutex
	passed time.Time
	said   bool // the accept_weaker line was printed
	// answering are the API server's endpoints the passed proof's control
	// pod read an answer from: the targets of a new sandbox's first
	// moments (firstmoments.go).
	answering []target
}

func newProofs(now func() time.Time) *proofs {
	return &proofs{now: now, by: map[string]*proofEntry{}}
}

func (c *proofs) entry(key string) *proofEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.by[key]
	if e == nil {
		e = &proofEntry{}
		c.by[key] = e
	}
	return e
}

// run calls prove unless a proof of key passed within proofTTL, and
// records a pass.
func (c *proofs) run(key string, prove func() error) error {
	e := c.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.passed.IsZero() && c.now().Sub(e.passed) < proofTTL {
		return nil
	}
	if err := prove(); err != nil {
		return err
	}
	e.passed = c.now()
	return nil
}

// answered records what the control read, during key's proof (run holds
// the entry's lock).
func (c *proofs) answered(key string, ts []target) {
	c.entry(key).answering = ts
}

// answers are the targets key's last passed proof found answering.
func (c *proofs) answers(key string) []target {
	e := c.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.answering)
}

// once reports whether key's accept_weaker line is yet to be said.
func (c *proofs) once(key string) bool {
	e := c.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	first := !e.said
	e.said = true
	return first
}

// proveDenyAll is Start's network check for p (nothing for a sandbox
// with a route out: it has no deny-all policy to prove).
func (b *Backend) proveDenyAll(ctx context.Context, p *policy.Policy) error {
	if p.Network.Mode != policy.NetworkLoopback || p.AllowAll {
		return nil
	}
	ns := b.namespace(p)
	key := b.cfg.Host + "\x00" + ns
	if slices.Contains(p.Accepted, profiles.CapOwnLoopback) {
		if b.proofs.once(key) {
			fmt.Fprintf(b.notices(), "triage-sandbox: kubernetes: own_loopback accepted ([sandbox] accept_weaker): not checking that the cluster enforces the sandbox's NetworkPolicy in namespace %s\n", ns)
		}
		return nil
	}
	return b.proofs.run(key, func() error {
		ctx, cancel := context.WithTimeout(ctx, proofBound)
		defer cancel()
		answering, err := b.prove(ctx, p, ns)
		if err == nil {
			b.proofs.answered(key, answering)
		}
		return err
	})
}

func (b *Backend) notices() io.Writer {
	if b.Notices != nil {
		return b.Notices
	}
	return os.Stderr
}

// target is one address the prober must not reach; send and expect
// (the API server's endpoints) are for a connect that reads an answer.
type target struct{ id, what, addr, send, expect string }

// prove runs the canary pods once, and returns the API server's
// endpoints that answered the control.
func (b *Backend) prove(ctx context.Context, p *policy.Policy, ns string) (_ []target, err error) {
	targets, err := b.serviceTargets(ctx)
	if err != nil {
		return nil, err
	}
	api, err := b.apiEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range api {
		targets = append(targets, target{id: t.ID, what: t.What, addr: t.Addr, send: t.Send, expect: t.Expect})
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	token := "triage-proof-" + hex.EncodeToString(id[:])
	suffix := hex.EncodeToString(id[:])
	listener, err := b.proofPod(p, "proof-listener-"+suffix, token, false)
	if err != nil {
		return nil, err
	}
	control, err := b.proofPod(p, "proof-control-"+suffix, token, false)
	if err != nil {
		return nil, err
	}
	prober, err := b.proofPod(p, "proof-prober-"+suffix, token, true)
	if err != nil {
		return nil, err
	}
	// The pods go whatever happens, ctx cancelled too.
	defer func() {
		for _, r := range []*Rendered{prober, control, listener} {
			err = errors.Join(err, b.remove(context.WithoutCancel(ctx), r))
		}
	}()
	for _, r := range []*Rendered{listener, control, prober} {
		if err := b.create(ctx, r); err != nil {
			return nil, fmt.Errorf("the network check's pod: %w", err)
		}
	}
	ip, err := b.awaitProofPod(ctx, listener)
	if err != nil {
		return nil, err
	}
	for _, r := range []*Rendered{control, prober} {
		if _, err := b.awaitProofPod(ctx, r); err != nil {
			return nil, err
		}
	}
	canary := target{id: "listener", what: "the check's listener pod " + net.JoinHostPort(ip, proofPort), addr: net.JoinHostPort(ip, proofPort)}
	if err := b.controlReaches(ctx, control, canary, ns); err != nil {
		return nil, err
	}
	answering, err := b.answeringAPI(ctx, control, targets, ns)
	if err != nil {
		return nil, err
	}
	return answering, b.proberBlocked(ctx, prober, append([]target{canary}, targets...), ns)
}

// answeringAPI are the API server's endpoints among targets that answer
// the control: one at least, or a new sandbox's first moments
// (firstmoments.go) would have nothing to judge its policy by.
func (b *Backend) answeringAPI(ctx context.Context, control *Rendered, targets []target, ns string) ([]target, error) {
	plan := protocol.ProbePlan{}
	var api []target
	for _, t := range targets {
		if t.expect != "" {
			api = append(api, t)
			plan.Steps = append(plan.Steps, tokenStep(t))
		}
	}
	if len(api) == 0 {
		return nil, fmt.Errorf("kubernetes: the network check cannot tell whether a new sandbox's pod is under its NetworkPolicy before its first command: the API shows no endpoint address of the API server (Endpoints default/kubernetes) to try; accept it with [sandbox] accept_weaker = [\"own_loopback\"]")
	}
	obs, err := b.execProbe(ctx, control.Pod.Namespace, control.Pod.Name, plan)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, t := range api {
		if strings.Contains(obs[t.id].Values["read"], t.expect) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("kubernetes: the network check cannot tell whether a new sandbox's pod is under its NetworkPolicy before its first command: a pod with no policy got no answer from the API server's endpoint %s in namespace %s; fix the pod network (or a policy of the namespace's that blocks it), or accept it with [sandbox] accept_weaker = [\"own_loopback\"]", api[0].addr, ns)
	}
	return out, nil
}

// tokenStep is a tcp_token step to t.
func tokenStep(t target) protocol.ProbeStep {
	return protocol.ProbeStep{ID: t.id, Op: "tcp_token", Args: map[string]string{"send": t.send}, List: []string{t.addr}}
}

// controlReaches: without a policy the listener is reached (it may not
// listen yet at the first tries), or the check cannot tell.
func (b *Backend) controlReaches(ctx context.Context, control *Rendered, canary target, ns string) error {
	for try := 0; ; try++ {
		reached, err := b.probeFrom(ctx, control, []target{canary})
		if err != nil {
			return err
		}
		if reached[canary.id] {
			return nil
		}
		if try == 10 {
			return fmt.Errorf("kubernetes: the network check cannot tell whether the cluster enforces NetworkPolicy in namespace %s: a pod with no policy did not reach the check's listener pod %s; fix the pod network (or a policy of the namespace's that blocks it), or accept it with [sandbox] accept_weaker = [\"own_loopback\"]", ns, canary.addr)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// proberBlocked: the prober under the deny-all policy reaches no target.
// While one is reached it tries again for proofSettle (the controller
// programs a new pod's rules after it runs); reached then refuses.
func (b *Backend) proberBlocked(ctx context.Context, prober *Rendered, all []target, ns string) error {
	settle := time.Now().Add(proofSettle)
	for {
		reached, err := b.probeFrom(ctx, prober, all)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(all, func(t target) bool { return reached[t.id] })
		if i < 0 {
			return nil
		}
		if time.Now().After(settle) {
			return fmt.Errorf("kubernetes: a pod under the sandbox's deny-all NetworkPolicy reached %s in namespace %s: the cluster's network plugin does not enforce NetworkPolicy; use a plugin that does, or accept it explicitly with [sandbox] accept_weaker = [\"own_loopback\"]", all[i].what, ns)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("the network check: %w", ctx.Err())
	case <-time.After(d):
		return nil
	}
}

// serviceTargets are the API server's service address (default/kubernetes)
// and cluster DNS (kube-system/kube-dns), each where it exists. One the
// API will not show refuses: the check would not know what it left out.
func (b *Backend) serviceTargets(ctx context.Context) ([]target, error) {
	var out []target
	for _, s := range []struct{ ns, name, what string }{{"default", "kubernetes", "the API server's service address"}, {"kube-system", "kube-dns", "the cluster DNS service"}} {
		svc, err := b.cli.getService(ctx, s.ns, s.name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("kubernetes: the network check cannot read the Service %s/%s: %v; let the user read it, or accept it with [sandbox] accept_weaker = [\"own_loopback\"]", s.ns, s.name, err)
		}
		ip := svc.Spec.ClusterIP
		if ip == "" || ip == corev1.ClusterIPNone {
			continue
		}
		for _, port := range svc.Spec.Ports {
			if port.Protocol != "" && port.Protocol != corev1.ProtocolTCP {
				continue
			}
			addr := net.JoinHostPort(ip, strconv.Itoa(int(port.Port)))
			out = append(out, target{id: s.name + "-" + strconv.Itoa(int(port.Port)), what: s.what + " " + addr, addr: addr})
		}
	}
	return out, nil
}

// proofPod renders one of the check's pods from p: a sandbox's pod (its
// labels, ownership annotations and deadline, so a sweep reaps it after
// a kill -9) whose one container serves token on proofPort for the
// proof's bound; denied keeps the sandbox's deny-all policy.
func (b *Backend) proofPod(p *policy.Policy, name, token string, denied bool) (*Rendered, error) {
	return b.servePod(p, name, token, denied, proofBound)
}

// servePod is proofPod for life: the pod's deadline and how long it
// serves.
func (b *Backend) servePod(p *policy.Policy, name, token string, denied bool, life time.Duration) (*Rendered, error) {
	info := b.runInfo(p, life)
	info.Name = "triage-sandbox-" + name
	r, err := Render(p, info)
	if err != nil {
		return nil, err
	}
	plan := protocol.ProbePlan{Steps: []protocol.ProbeStep{{ID: "serve", Op: "tcp_serve",
		Args: map[string]string{"addr": ":" + proofPort, "token": token, "udp": "true", "seconds": strconv.Itoa(int(life / time.Second))}}}}
	argv, err := protocol.Argv(launch.InitPath, protocol.EntryProbe, protocol.Probe{Tag: "proof", Plan: plan})
	if err != nil {
		return nil, err
	}
	spec := &r.Pod.Spec
	spec.InitContainers, spec.Volumes = nil, nil
	c := &spec.Containers[0]
	c.Command, c.Env, c.VolumeMounts = argv, nil, nil
	// Small and fixed (room for gVisor's kernel too): three pods of the
	// sandbox's own limits could pass a node's or a quota's room that one
	// sandbox fits in.
	small := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("100m")}
	c.Resources = corev1.ResourceRequirements{Limits: small, Requests: small}
	c.Stdin, c.StdinOnce = false, false
	if !denied {
		// The listener and the control stand for the pod network itself:
		// the cluster's default runtime, not the sandbox's (gVisor with
		// its own network stack, --network=none, has no pod network at
		// all, and a control there would reach nothing).
		r.NetworkPolicy = nil
		r.Pod.Spec.RuntimeClassName = nil
	} else if r.NetworkPolicy == nil {
		return nil, errors.New("kubernetes: the network check's prober rendered no deny-all policy")
	}
	return r, nil
}

// awaitProofPod waits until r's container runs and returns its address.
func (b *Backend) awaitProofPod(ctx context.Context, r *Rendered) (string, error) {
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		pod, err := b.cli.getPod(ctx, r.Pod.Namespace, r.Pod.Name)
		if err != nil {
			return "", fmt.Errorf("the network check's pod %s: %w", r.Pod.Name, err)
		}
		done, err := podStarted(pod)
		if err != nil {
			return "", fmt.Errorf("the network check's pod %s: %w", r.Pod.Name, err)
		}
		if done && pod.Status.PodIP != "" {
			return pod.Status.PodIP, nil
		}
		if err := sleep(ctx, wait); err != nil {
			return "", fmt.Errorf("the network check's pod %s did not start: %w", r.Pod.Name, err)
		}
	}
}

// probeFrom runs one tcp_connect per target in r's container (an exec of
// the image's binary) and says which connected. A refusal or a timeout
// is blocked here (unlike the selftest's reading): every target listens,
// so a refusal is the policy controller's reject.
func (b *Backend) probeFrom(ctx context.Context, r *Rendered, targets []target) (map[string]bool, error) {
	plan := protocol.ProbePlan{}
	for _, t := range targets {
		plan.Steps = append(plan.Steps, protocol.ProbeStep{ID: t.id, Op: "tcp_connect", List: []string{t.addr}})
	}
	obs, err := b.execProbe(ctx, r.Pod.Namespace, r.Pod.Name, plan)
	if err != nil {
		return nil, err
	}
	reached := map[string]bool{}
	for _, t := range targets {
		o, ok := obs[t.id]
		if !ok {
			return nil, fmt.Errorf("the network check's probe in pod %s said nothing of %s", r.Pod.Name, t.what)
		}
		reached[t.id] = o.OK && strings.HasPrefix(o.Detail, "connected to ")
	}
	return reached, nil
}

// execProbe runs plan in the pod's holder container (an exec of the
// image's binary) and returns its observations.
func (b *Backend) execProbe(ctx context.Context, ns, pod string, plan protocol.ProbePlan) (map[string]protocol.ProbeObservation, error) {
	argv, err := protocol.Argv(launch.InitPath, protocol.EntryProbe, protocol.Probe{Tag: "proof", Plan: plan})
	if err != nil {
		return nil, err
	}
	u := b.cli.podStreamURL(ns, pod, "exec",
		&corev1.PodExecOptions{Container: holderContainer, Command: argv, Stdout: true, Stderr: true})
	ex, err := b.executor(u)
	if err != nil {
		return nil, err
	}
	var out, errOut bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil {
		return nil, fmt.Errorf("the network check's probe in pod %s: %v: %s", pod, err, strings.TrimSpace(errOut.String()))
	}
	obs, err := protocol.ParseProbeObservations(&out)
	if err != nil {
		return nil, fmt.Errorf("the network check's probe in pod %s: %w", pod, err)
	}
	return obs, nil
}
