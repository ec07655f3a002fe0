package kubernetes

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The few shapes of sigs.k8s.io/agent-sandbox v1.0.1's API this backend
// writes and reads, copied rather than imported: its module wants
// k8s.io/api v0.36, controller-runtime, OpenTelemetry and gRPC. Sources:
// api/v1beta1/sandbox_types.go (Sandbox, SandboxBlueprint, PodTemplate,
// PodMetadata) and extensions/api/v1beta1/sandboxtemplate_types.go,
// sandboxclaim_types.go, sandboxwarmpool_types.go. Fields this backend
// does not set are left out; what it reads back from the API server it
// decodes into these shapes, so a field it does not know is not kept.

// The API groups and resources.
const (
	agentsGroupVersion     = "agents.x-k8s.io/v1beta1"
	extensionsGroupVersion = "extensions.agents.x-k8s.io/v1beta1"
	resTemplates           = "sandboxtemplates"
	resClaims              = "sandboxclaims"
	resWarmPools           = "sandboxwarmpools"
	resSandboxes           = "sandboxes"
)

// Labels and annotations the controller sets (api/v1beta1/sandbox_types.go).
const (
	asPodNameAnnotation = "agents.x-k8s.io/pod-name"
)

// networkPolicyManaged: the controller keeps one NetworkPolicy per
// template, made of the template's networkPolicy rules.
const networkPolicyManaged = "Managed"

// asTemplate is a SandboxTemplate.
type asTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              asTemplateSpec `json:"spec"`
}

// asTemplateSpec is SandboxTemplateSpec: SandboxBlueprint inline, then the
// network policy. NetworkPolicy is never nil here: nil under Managed is
// the controller's "secure default" (egress to every public address, DNS
// at public resolvers); empty rules are its deny-all.
type asTemplateSpec struct {
	PodTemplate             asPodTemplate    `json:"podTemplate"`
	Service                 *bool            `json:"service,omitempty"`
	NetworkPolicy           *asNetworkPolicy `json:"networkPolicy,omitempty"`
	NetworkPolicyManagement string           `json:"networkPolicyManagement,omitempty"`
}

// asPodTemplate is PodTemplate: the pod's spec and the labels and
// annotations the Sandbox controller copies onto the pod.
type asPodTemplate struct {
	Spec     corev1.PodSpec `json:"spec"`
	Metadata asPodMetadata  `json:"metadata"`
}

type asPodMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// asNetworkPolicy is the template's NetworkPolicySpec: empty ingress and
// egress deny everything in and out.
type asNetworkPolicy struct {
	Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`
	Egress  []networkingv1.NetworkPolicyEgressRule  `json:"egress,omitempty"`
}

// asWarmPool is a SandboxWarmPool.
type asWarmPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              asWarmPoolSpec `json:"spec"`
	Status            struct {
		ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	} `json:"status,omitempty"`
}

// asWarmPoolSpec: Replicas is always written (the CRD's default is 1).
type asWarmPoolSpec struct {
	Replicas    *int32 `json:"replicas"`
	TemplateRef asRef  `json:"sandboxTemplateRef"`
}

type asRef struct {
	Name string `json:"name"`
}

// asClaim is a SandboxClaim. In v1.0.1 a claim names a warm pool, not a
// template: a sandbox of a template with no pool of its own is claimed
// from a pool of no replicas (the controller then starts it cold).
type asClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              asClaimSpec   `json:"spec"`
	Status            asClaimStatus `json:"status,omitempty"`
}

type asClaimSpec struct {
	WarmPoolRef asRef        `json:"warmPoolRef"`
	Lifecycle   *asLifecycle `json:"lifecycle,omitempty"`
}

// asLifecycle: at ShutdownTime the controller deletes the claim's
// Sandbox (ShutdownPolicy "Delete"): the cluster's backstop of the
// owner's expiry.
type asLifecycle struct {
	ShutdownTime   *metav1.Time `json:"shutdownTime,omitempty"`
	ShutdownPolicy string       `json:"shutdownPolicy,omitempty"`
}

type asClaimStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Sandbox    struct {
		Name string `json:"name,omitempty"`
	} `json:"sandbox,omitempty"`
}

// asSandbox is the little of a Sandbox read back: who owns it, and its
// pod's name.
type asSandbox struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// asList is a list of one of the kinds above, read for the sweep.
type asList struct {
	Items []struct {
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Spec              struct {
			WarmPoolRef asRef `json:"warmPoolRef"`
			TemplateRef asRef `json:"sandboxTemplateRef"`
		} `json:"spec"`
	} `json:"items"`
}
