package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// agentSandbox: the policy asks for the agent-sandbox API
// ([sandbox] kubernetes_api = "agent-sandbox").
func agentSandbox(p *policy.Policy) bool { return p.KubernetesAPI == profiles.KubernetesAgentSandbox }

// path is the URL path of an agent-sandbox resource (name "" the
// collection; ns "" every namespace).
func asPath(gv, ns, res, name string) string {
	out := "/apis/" + gv
	if ns != "" {
		out += "/namespaces/" + ns
	}
	out += "/" + res
	if name != "" {
		out += "/" + name
	}
	return out
}

func (a *api) asCreate(ctx context.Context, path string, obj any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return a.core.Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
}

func (a *api) asGet(ctx context.Context, path string, out any) error {
	raw, err := a.core.Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

func (a *api) asList(ctx context.Context, path, selector string) (*asList, error) {
	raw, err := a.core.Get().AbsPath(path).Param("labelSelector", selector).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := &asList{}
	return out, json.Unmarshal(raw, out)
}

// asDelete deletes in the background: the garbage collector removes what
// the object owns (a claim's Sandbox, then its pod).
func (a *api) asDelete(ctx context.Context, path string) error {
	bg := metav1.DeletePropagationBackground
	return a.core.Delete().AbsPath(path).Body(&metav1.DeleteOptions{PropagationPolicy: &bg}).Do(ctx).Error()
}

// createClaimedPod is Start's pod through the agent-sandbox controller: our
// deny-all, the template (made once per policy, checked when it is
// there), the run's warm pool of none (or the keeper's pool), the claim;
// then the pod the controller made for it, checked to be the claim's and
// the template's, which Start holds, stages and runs in exactly as a pod
// of our own.
func (b *Backend) createClaimedPod(setupCtx, ctx context.Context, p *policy.Policy, info RunInfo) (*Rendered, error) {
	c, err := RenderClaim(p, info, 0)
	if err != nil {
		return nil, err
	}
	r := &Rendered{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: info.Namespace, Name: info.Name}}, NetworkPolicy: c.NetworkPolicy, Info: info, claim: c}
	if err := b.createClaimed(setupCtx, c); err != nil {
		return nil, errors.Join(err, b.remove(ctx, r))
	}
	pod, err := b.claimedPod(setupCtx, c)
	if err != nil {
		return nil, errors.Join(err, b.remove(ctx, r))
	}
	r.Pod = pod
	return r, nil
}

// createClaimed makes the run's objects: our deny-all first (the pod is
// never without it), the template if it is not there (else checked), the
// claim's pool unless the keeper's pool of the template is there, then
// the claim.
func (b *Backend) createClaimed(ctx context.Context, c *claimed) error {
	ns := c.Claim.Namespace
	if np := c.NetworkPolicy; np != nil {
		if err := b.cli.createNetworkPolicy(ctx, np); err != nil {
			return fmt.Errorf("creating the sandbox's NetworkPolicy %s/%s: %w", np.Namespace, np.Name, err)
		}
	}
	if err := b.ensureTemplate(ctx, c.Template); err != nil {
		return err
	}
	var kept asWarmPool
	err := b.cli.asGet(ctx, asPath(extensionsGroupVersion, ns, resWarmPools, c.Template.Name), &kept)
	switch {
	case err == nil && kept.Spec.Replicas != nil && *kept.Spec.Replicas > 0 && kept.Spec.TemplateRef.Name == c.Template.Name:
		c.Pool, c.ownPool = &kept, false
		c.Claim.Spec.WarmPoolRef.Name = kept.Name
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the SandboxWarmPool %s/%s: %w", ns, c.Template.Name, agentSandboxMissing(err))
	default:
		if err := b.cli.asCreate(ctx, asPath(extensionsGroupVersion, ns, resWarmPools, ""), c.Pool); err != nil {
			return fmt.Errorf("creating the SandboxWarmPool %s/%s: %w", ns, c.Pool.Name, agentSandboxMissing(err))
		}
	}
	if err := b.cli.asCreate(ctx, asPath(extensionsGroupVersion, ns, resClaims, ""), c.Claim); err != nil {
		return fmt.Errorf("creating the SandboxClaim %s/%s: %w", ns, c.Claim.Name, agentSandboxMissing(err))
	}
	return nil
}

// ensureTemplate creates the policy's template, or checks the one there.
func (b *Backend) ensureTemplate(ctx context.Context, tpl *asTemplate) error {
	err := b.cli.asCreate(ctx, asPath(extensionsGroupVersion, tpl.Namespace, resTemplates, ""), tpl)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the SandboxTemplate %s/%s: %w", tpl.Namespace, tpl.Name, agentSandboxMissing(err))
	}
	var got asTemplate
	if err := b.cli.asGet(ctx, asPath(extensionsGroupVersion, tpl.Namespace, resTemplates, tpl.Name), &got); err != nil {
		return fmt.Errorf("reading the SandboxTemplate %s/%s: %w", tpl.Namespace, tpl.Name, err)
	}
	if got.DeletionTimestamp != nil {
		return fmt.Errorf("the SandboxTemplate %s/%s is being deleted; run again", tpl.Namespace, tpl.Name)
	}
	return checkTemplate(tpl, &got)
}

// agentSandboxMissing says what a 404 on an agent-sandbox resource means.
func agentSandboxMissing(err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w (the cluster serves no agent-sandbox API: install sigs.k8s.io/agent-sandbox's CRDs and run its controller with --extensions, or set [sandbox] kubernetes_api = \"pods\")", err)
	}
	return err
}

// claimedPod waits until the controller has given the claim a Sandbox
// and that Sandbox a pod, and returns the pod once it is shown to be
// theirs (the claim controls the Sandbox, the Sandbox the pod) and the
// template's pod (holder, volumes, security context as rendered).
func (b *Backend) claimedPod(ctx context.Context, c *claimed) (*corev1.Pod, error) {
	ns := c.Claim.Namespace
	var last error
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		pod, err := b.claimPod(ctx, c)
		if pod != nil || err != nil && !errors.Is(err, errNotYet) {
			return pod, err
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the agent-sandbox controller made no pod for the SandboxClaim %s/%s: %v (%v; is the controller running with --extensions?)", ns, c.Claim.Name, ctx.Err(), last)
		case <-time.After(wait):
		}
	}
}

var errNotYet = errors.New("not yet")

// claimPod is the claim's pod, nil and errNotYet while there is none.
func (b *Backend) claimPod(ctx context.Context, c *claimed) (*corev1.Pod, error) {
	ns := c.Claim.Namespace
	var claim asClaim
	if err := b.cli.asGet(ctx, asPath(extensionsGroupVersion, ns, resClaims, c.Claim.Name), &claim); err != nil {
		return nil, fmt.Errorf("reading the SandboxClaim %s/%s: %w", ns, c.Claim.Name, err)
	}
	c.Claim.UID = claim.UID
	if claim.Status.Sandbox.Name == "" {
		for _, cond := range claim.Status.Conditions {
			if cond.Type == "Ready" && cond.Status == metav1.ConditionFalse {
				return nil, fmt.Errorf("%w: the claim is not ready: %s: %s", errNotYet, cond.Reason, cond.Message)
			}
		}
		return nil, fmt.Errorf("%w: the claim has no Sandbox", errNotYet)
	}
	var sb asSandbox
	if err := b.cli.asGet(ctx, asPath(agentsGroupVersion, ns, resSandboxes, claim.Status.Sandbox.Name), &sb); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: no Sandbox %s", errNotYet, claim.Status.Sandbox.Name)
		}
		return nil, err
	}
	if !controlledBy(sb.OwnerReferences, "SandboxClaim", claim.UID) {
		return nil, fmt.Errorf("%w: the Sandbox %s is not the claim's yet", errNotYet, sb.Name)
	}
	c.sandbox = sb.Name
	name := sb.Name
	if n := sb.Annotations[asPodNameAnnotation]; n != "" {
		name = n
	}
	pod, err := b.cli.getPod(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: no pod %s", errNotYet, name)
	}
	if err != nil {
		return nil, err
	}
	if !controlledBy(pod.OwnerReferences, "Sandbox", sb.UID) {
		return nil, fmt.Errorf("the pod %s/%s is not the claim's Sandbox's: refusing it", ns, name)
	}
	if err := samePod(c.Pod, pod); err != nil {
		return nil, fmt.Errorf("the pod %s/%s the controller made is not the template's: %v; refusing it", ns, name, err)
	}
	return pod, nil
}

func controlledBy(refs []metav1.OwnerReference, kind string, uid any) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller && r.Kind == kind && fmt.Sprint(r.UID) == fmt.Sprint(uid) {
			return true
		}
	}
	return false
}

// samePod: got has want's isolation: its containers (image, command,
// security context, mounts, stdin), volumes, security context, runtime
// class and the host namespaces and token it must not have.
func samePod(want, got *corev1.Pod) error {
	w, g := &want.Spec, &got.Spec
	if len(w.Containers) != len(g.Containers) || len(w.InitContainers) != len(g.InitContainers) {
		return errors.New("other containers")
	}
	if err := sameContainers(w.InitContainers, g.InitContainers); err != nil {
		return err
	}
	if err := sameContainers(w.Containers, g.Containers); err != nil {
		return err
	}
	switch {
	case !equality.Semantic.DeepEqual(w.SecurityContext, g.SecurityContext):
		return errors.New("the pod's security context differs")
	case !equality.Semantic.DeepEqual(w.Volumes, g.Volumes):
		return errors.New("its volumes differ")
	case !equality.Semantic.DeepEqual(w.RuntimeClassName, g.RuntimeClassName):
		return errors.New("its RuntimeClass differs")
	case g.HostNetwork || g.HostPID || g.HostIPC || g.AutomountServiceAccountToken == nil || *g.AutomountServiceAccountToken:
		return errors.New("it has a host namespace or the service account's token")
	case !equality.Semantic.DeepEqual(w.ActiveDeadlineSeconds, g.ActiveDeadlineSeconds):
		return errors.New("its deadline differs")
	}
	return nil
}

// sameContainers: each of got is want's at its index (samePod).
func sameContainers(want, got []corev1.Container) error {
	for i := range want {
		if !sameContainer(want[i], got[i]) {
			return fmt.Errorf("container %s differs", got[i].Name)
		}
	}
	return nil
}

// sameContainer compares what a container's isolation is made of.
func sameContainer(x, y corev1.Container) bool {
	eq := equality.Semantic.DeepEqual
	return x.Name == y.Name && x.Image == y.Image && x.Stdin == y.Stdin && x.StdinOnce == y.StdinOnce &&
		eq(x.Command, y.Command) && eq(x.Args, y.Args) && eq(x.SecurityContext, y.SecurityContext) &&
		eq(x.VolumeMounts, y.VolumeMounts) && eq(x.Env, y.Env) && eq(x.Resources, y.Resources)
}

// removeClaimed deletes the claim (the garbage collector takes its
// Sandbox, the Sandbox's pod), the pod at once with no grace as a pod of
// our own, and waits until none of them is there; then the run's own
// pool and, last, its deny-all.
func (b *Backend) removeClaimed(ctx context.Context, r *Rendered) error {
	ctx, cancel := context.WithTimeout(ctx, goneTimeout)
	defer cancel()
	c := r.claim
	ns := c.Claim.Namespace
	claimPath := asPath(extensionsGroupVersion, ns, resClaims, c.Claim.Name)
	err := deleteAndWait(ctx, "SandboxClaim", c.Claim.Name,
		func(ctx context.Context) error { return b.cli.asDelete(ctx, claimPath) },
		func(ctx context.Context) error { return b.cli.asGet(ctx, claimPath, &asClaim{}) })
	// Its Sandbox and pod are deleted here, not left to the garbage
	// collector (a cluster may run none; it takes its time). A claim that
	// never got its pod may still get one made (cold: named as the claim)
	// until the controller sees the claim gone.
	sbName := c.sandbox
	if sbName == "" {
		sbName = c.Claim.Name
	}
	err = errors.Join(err, b.deleteSandbox(ctx, ns, sbName, r.Pod.Name))
	if c.ownPool {
		poolPath := asPath(extensionsGroupVersion, ns, resWarmPools, c.Pool.Name)
		err = errors.Join(err, deleteAndWait(ctx, "SandboxWarmPool", c.Pool.Name,
			func(ctx context.Context) error { return b.cli.asDelete(ctx, poolPath) },
			func(ctx context.Context) error { return b.cli.asGet(ctx, poolPath, &asWarmPool{}) }))
	}
	if np := r.NetworkPolicy; np != nil {
		err = errors.Join(err, deleteAndWait(ctx, "NetworkPolicy", np.Name,
			func(ctx context.Context) error { return b.cli.deleteNetworkPolicy(ctx, np.Namespace, np.Name) },
			func(ctx context.Context) error { return b.cli.getNetworkPolicy(ctx, np.Namespace, np.Name) }))
	}
	return err
}

// deleteSandbox deletes a Sandbox and its pod and waits until neither is
// there.
func (b *Backend) deleteSandbox(ctx context.Context, ns, sandbox, pod string) error {
	sbPath := asPath(agentsGroupVersion, ns, resSandboxes, sandbox)
	err := deleteAndWait(ctx, "Sandbox", sandbox,
		func(ctx context.Context) error { return b.cli.asDelete(ctx, sbPath) },
		func(ctx context.Context) error { return b.cli.asGet(ctx, sbPath, &asSandbox{}) })
	// The Sandbox controller may make the pod once more from a cache that
	// still had the Sandbox: a pod back within settle is deleted again.
	for try := 0; ; try++ {
		err = errors.Join(err, deleteAndWait(ctx, "pod", pod,
			func(ctx context.Context) error { return b.cli.deletePod(ctx, ns, pod) },
			func(ctx context.Context) error { _, err := b.cli.getPod(ctx, ns, pod); return err }))
		if err != nil || try == 2 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(settle):
		}
		if _, gerr := b.cli.getPod(ctx, ns, pod); apierrors.IsNotFound(gerr) {
			return nil
		}
	}
}

// settle is how long a deleted claimed pod must stay gone.
const settle = 300 * time.Millisecond

// deleteOrphans deletes the pods of ours in ns (selector) that a Sandbox
// that is no longer there controls: what a cluster's garbage collector
// would remove (one without it keeps them).
func (b *Backend) deleteOrphans(ctx context.Context, ns, selector string) ([]string, error) {
	pods, err := b.cli.listPods(ctx, ns, selector)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, p := range pods.Items {
		for _, r := range p.OwnerReferences {
			if r.Controller == nil || !*r.Controller || r.Kind != "Sandbox" {
				continue
			}
			var sb asSandbox
			gerr := b.cli.asGet(ctx, asPath(agentsGroupVersion, p.Namespace, resSandboxes, r.Name), &sb)
			if gerr == nil && sb.UID == r.UID || gerr != nil && !apierrors.IsNotFound(gerr) {
				continue
			}
			if err := b.cli.deletePod(ctx, p.Namespace, p.Name); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err))
				continue
			}
			removed = append(removed, "pod/"+p.Namespace+"/"+p.Name)
		}
	}
	return removed, errors.Join(errs...)
}

// deleteOwnedSandboxes deletes the Sandboxes in ns that the kind's object
// of uid controls (a claim's, a warm pool's), and their pods.
func (b *Backend) deleteOwnedSandboxes(ctx context.Context, ns, kind, uid string) error {
	var l struct {
		Items []asSandbox `json:"items"`
	}
	if err := b.cli.asGet(ctx, asPath(agentsGroupVersion, ns, resSandboxes, ""), &l); err != nil {
		return fmt.Errorf("listing Sandboxes in %s: %w", ns, err)
	}
	var errs []error
	for _, sb := range l.Items {
		if uid == "" || !controlledBy(sb.OwnerReferences, kind, uid) {
			continue
		}
		pod := sb.Name
		if n := sb.Annotations[asPodNameAnnotation]; n != "" {
			pod = n
		}
		errs = append(errs, b.deleteSandbox(ctx, ns, sb.Name, pod))
	}
	return errors.Join(errs...)
}

// KeepPool implements backends.ClusterPool: with the agent-sandbox API, a
// reproducer pool of K is a SandboxWarmPool of K for the policy's
// template (named as the template; the keeper's ownership on it), and
// each take claims from it. release deletes the pool and waits until its
// warm sandboxes' pods are gone.
func (b *Backend) KeepPool(ctx context.Context, p *policy.Policy, ttl time.Duration) (func(context.Context) error, bool, error) {
	if !agentSandbox(p) || p.Warm.Pool <= 0 {
		return nil, false, nil
	}
	if _, err := b.client(); err != nil {
		return nil, false, err
	}
	copies, err := copiedDirs(p)
	if err != nil {
		return nil, false, err
	}
	// The template's copy volumes are sized by the copy as it is now.
	spool, size, err := spoolCopy(ctx, p, copies)
	if err != nil {
		return nil, false, err
	}
	if spool != nil {
		_ = spool.Close()
	}
	info := b.runInfo(p, ttl)
	info.CopyBytes = size
	c, err := RenderClaim(p, info, p.Warm.Pool)
	if err != nil {
		return nil, false, err
	}
	ns := info.Namespace
	if err := b.ensureTemplate(ctx, c.Template); err != nil {
		return nil, false, err
	}
	poolPath := asPath(extensionsGroupVersion, ns, resWarmPools, c.Pool.Name)
	if err := b.cli.asCreate(ctx, asPath(extensionsGroupVersion, ns, resWarmPools, ""), c.Pool); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, false, fmt.Errorf("the SandboxWarmPool %s/%s is there already (another keeper's pool of this policy; `triage-sandbox sweep` removes one whose keeper is gone)", ns, c.Pool.Name)
		}
		return nil, false, fmt.Errorf("creating the SandboxWarmPool %s/%s: %w", ns, c.Pool.Name, agentSandboxMissing(err))
	}
	release := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, goneTimeout)
		defer cancel()
		var pool asWarmPool
		if err := b.cli.asGet(ctx, poolPath, &pool); err != nil {
			return fmt.Errorf("reading the SandboxWarmPool %s/%s: %w", ns, c.Pool.Name, err)
		}
		err := deleteAndWait(ctx, "SandboxWarmPool", c.Pool.Name,
			func(ctx context.Context) error { return b.cli.asDelete(ctx, poolPath) },
			func(ctx context.Context) error { return b.cli.asGet(ctx, poolPath, &asWarmPool{}) })
		// Its warm sandboxes, and their pods, go with it.
		return errors.Join(err, b.deleteOwnedSandboxes(ctx, ns, "SandboxWarmPool", string(pool.UID)))
	}
	return release, true, nil
}

// sweepClaimed is the sweep's part for agent-sandbox objects in ns (""
// all): the claims and pools of ours whose owner is gone or whose
// lifetime passed (a claim's Sandbox and pod, a pool's warm sandboxes go
// with them), then each template of ours that no pool names and that is
// older than templateGrace (a start makes its template, then at once its
// pool). A cluster without the agent-sandbox API has nothing of it.
func (b *Backend) sweepClaimed(ctx context.Context, ns string, now time.Time) ([]string, error) {
	var removed []string
	var errs []error
	if _, err := b.cli.asList(ctx, asPath(extensionsGroupVersion, ns, resClaims, ""), ownerSelector); ns == "" && apierrors.IsForbidden(err) {
		ns = b.namespace(nil)
	}
	for _, res := range []string{resClaims, resWarmPools} {
		l, err := b.cli.asList(ctx, asPath(extensionsGroupVersion, ns, res, ""), ownerSelector)
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			// No agent-sandbox API here, or none this user may use: nothing
			// of it can be ours.
			return nil, nil
		}
		if err != nil {
			return removed, fmt.Errorf("listing triage-sandbox %s: %w", res, err)
		}
		gone, err := b.sweepStale(ctx, res, l, now)
		removed = append(removed, gone...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	orphans, err := b.deleteOrphans(ctx, ns, ownerSelector)
	removed = append(removed, orphans...)
	if err != nil {
		errs = append(errs, err)
	}
	unused, err := b.sweepUnusedTemplates(ctx, ns, now)
	removed = append(removed, unused...)
	return removed, errors.Join(append(errs, err)...)
}

// sweepStale deletes the stale claims or pools (res) of l, with the
// Sandboxes each controls.
func (b *Backend) sweepStale(ctx context.Context, res string, l *asList, now time.Time) ([]string, error) {
	var removed []string
	var errs []error
	kind := map[string]string{resClaims: "SandboxClaim", resWarmPools: "SandboxWarmPool"}[res]
	for _, o := range l.Items {
		if !stale(o.Annotations, b.host, now) || o.DeletionTimestamp != nil {
			continue
		}
		if err := b.cli.asDelete(ctx, asPath(extensionsGroupVersion, o.Namespace, res, o.Name)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", res, o.Namespace, o.Name, err))
			continue
		}
		removed = append(removed, res+"/"+o.Namespace+"/"+o.Name)
		if err := b.deleteOwnedSandboxes(ctx, o.Namespace, kind, string(o.UID)); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// sweepUnusedTemplates deletes our templates that no pool names, once
// older than templateGrace (a start may be about to make its pool).
func (b *Backend) sweepUnusedTemplates(ctx context.Context, ns string, now time.Time) ([]string, error) {
	pools, err := b.cli.asList(ctx, asPath(extensionsGroupVersion, ns, resWarmPools, ""), "")
	if err != nil {
		return nil, fmt.Errorf("listing SandboxWarmPools: %w", err)
	}
	named := map[string]bool{}
	for _, o := range pools.Items {
		if o.DeletionTimestamp == nil {
			named[o.Namespace+"/"+o.Spec.TemplateRef.Name] = true
		}
	}
	tpls, err := b.cli.asList(ctx, asPath(extensionsGroupVersion, ns, resTemplates, ""), ownerSelector)
	if err != nil {
		return nil, fmt.Errorf("listing triage-sandbox SandboxTemplates: %w", err)
	}
	var removed []string
	var errs []error
	for _, o := range tpls.Items {
		if named[o.Namespace+"/"+o.Name] || now.Sub(o.CreationTimestamp.Time) < templateGrace || o.DeletionTimestamp != nil {
			continue
		}
		if err := b.cli.asDelete(ctx, asPath(extensionsGroupVersion, o.Namespace, resTemplates, o.Name)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting SandboxTemplate %s/%s: %w", o.Namespace, o.Name, err))
			continue
		}
		removed = append(removed, resTemplates+"/"+o.Namespace+"/"+o.Name)
	}
	return removed, errors.Join(errs...)
}

// templateGrace: a template younger than this is kept by the sweep even
// with no pool naming it (a start between the two).
const templateGrace = time.Minute
