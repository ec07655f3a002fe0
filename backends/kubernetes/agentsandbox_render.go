package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/bits"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// labelTemplate is on the pods of one of our SandboxTemplates (its
// podTemplate's labels, which the Sandbox controller copies onto each
// pod): our own deny-all NetworkPolicy of each run selects them by it.
const labelTemplate = "io.triage-sandbox.template"

// claimed is one agent-sandbox run's objects: the policy's template, the
// warm pool the claim names (a pool of its own with no replicas, or the
// keeper's), the claim, our own deny-all beside the controller's, and the
// pod as the template makes it (what the controller's pod is checked
// against).
type claimed struct {
	Template      *asTemplate
	Pool          *asWarmPool
	Claim         *asClaim
	NetworkPolicy *networkingv1.NetworkPolicy
	Pod           *corev1.Pod
	// ownPool: Pool is this run's (removed with it), not the keeper's.
	ownPool bool
	// sandbox is the name of the claim's Sandbox once seen.
	sandbox string
}

// RenderClaim turns the policy into agent-sandbox objects: a
// SandboxTemplate holding the pod Render makes (the same holder, volumes,
// security context; nothing of the run in it, so one template serves
// every run of the policy: it is named by its own hash), a SandboxClaim
// for the run, carrying the ownership annotations the sweep judges, and
// the warm pool it claims from: pool replicas keep that many sandboxes of
// the template started (the reproducer's pool), 0 a pool of the run's own
// (a v1.0.1 claim names a pool, never a template). For a sandbox with no
// network, the template's networkPolicy is Managed with no rules (the
// controller's deny-all for every pod of the template) and the run has
// its own deny-all besides, made before the claim and removed after the
// pod: the controller's exists only once it has seen the template, and
// goes with the template.
func RenderClaim(p *policy.Policy, info RunInfo, pool int) (*claimed, error) {
	copies, err := copiedDirs(p)
	if err != nil {
		return nil, err
	}
	tinfo := info
	tinfo.Name, tinfo.ParentPID, tinfo.ParentStart, tinfo.Host = "", 0, "", ""
	if len(copies) > 0 {
		// The copy's volumes are sized by it; a power of two lets runs of a
		// checkout that grows a little share the template.
		tinfo.CopyBytes = roundUpPow2(max(info.CopyBytes, 1<<20))
	}
	r, err := Render(p, tinfo)
	if err != nil {
		return nil, err
	}
	pod := r.Pod
	pod.ObjectMeta = metav1.ObjectMeta{Namespace: info.Namespace}
	tpl := &asTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: extensionsGroupVersion, Kind: "SandboxTemplate"},
		Spec: asTemplateSpec{
			PodTemplate: asPodTemplate{Spec: pod.Spec},
			Service:     ptr(false),
		},
	}
	if p.Network.Mode == policy.NetworkLoopback {
		tpl.Spec.NetworkPolicy = &asNetworkPolicy{}
		tpl.Spec.NetworkPolicyManagement = networkPolicyManaged
	} else {
		// An outbound sandbox's pod has no NetworkPolicy of ours, nor may
		// the controller give it its own (egress to public addresses only).
		tpl.Spec.NetworkPolicyManagement = "Unmanaged"
	}
	spec, err := json.Marshal(tpl.Spec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(spec)
	name := "triage-sandbox-" + string(p.Role) + "-" + hex.EncodeToString(sum[:6])
	labels := map[string]string{profiles.LabelOwner: "triage-sandbox", profiles.LabelRole: string(p.Role), labelTemplate: name}
	tpl.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: info.Namespace, Labels: labels,
		Annotations: map[string]string{profiles.LabelPolicyHash: p.ShortHash()}}
	tpl.Spec.PodTemplate.Metadata = asPodMetadata{Labels: labels, Annotations: map[string]string{profiles.LabelPolicyHash: p.ShortHash()}}
	pod.Labels = labels

	own := objectMeta(p, info)
	out := &claimed{Template: tpl, Pod: pod}
	poolName := name
	if pool <= 0 {
		poolName, out.ownPool = info.Name, true
	}
	out.Pool = &asWarmPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: extensionsGroupVersion, Kind: "SandboxWarmPool"},
		ObjectMeta: own,
		Spec:       asWarmPoolSpec{Replicas: ptr(int32(max(pool, 0))), TemplateRef: asRef{Name: name}},
	}
	out.Pool.Name = poolName
	claim := &asClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: extensionsGroupVersion, Kind: "SandboxClaim"},
		ObjectMeta: objectMeta(p, info),
		Spec:       asClaimSpec{WarmPoolRef: asRef{Name: poolName}},
	}
	if !info.ExpiresAt.IsZero() {
		claim.Spec.Lifecycle = &asLifecycle{ShutdownTime: &metav1.Time{Time: info.ExpiresAt.UTC().Truncate(time.Second)}, ShutdownPolicy: "Delete"}
	}
	out.Claim = claim
	if p.Network.Mode == policy.NetworkLoopback {
		np := denyAll(p, info)
		np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{profiles.LabelOwner: "triage-sandbox", labelTemplate: name}}
		out.NetworkPolicy = np
	}
	return out, nil
}

// roundUpPow2 is the least power of two at least n (n > 0).
func roundUpPow2(n int64) int64 {
	return 1 << (64 - bits.LeadingZeros64(uint64(n-1)))
}

// checkTemplate: a template of ours that exists already (made by an
// earlier run, or by anyone who may write templates in the namespace) is
// the one we would make, else nothing is claimed from it.
func checkTemplate(want, got *asTemplate) error {
	w, err := json.Marshal(want.Spec)
	if err != nil {
		return err
	}
	g, err := json.Marshal(got.Spec)
	if err != nil {
		return err
	}
	if string(w) != string(g) {
		return fmt.Errorf("the SandboxTemplate %s/%s is not the one this policy makes (changed since it was made); delete it and run again", got.Namespace, got.Name)
	}
	return nil
}
