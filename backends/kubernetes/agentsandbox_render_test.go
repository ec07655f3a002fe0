package kubernetes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func claimPolicy(t *testing.T, role profiles.Role) *policy.Policy {
	p := rolePolicy(t, role, nil)
	p.Namespace, p.KubernetesAPI = "triage", profiles.KubernetesAgentSandbox
	return p
}

// TestRenderClaim: the template is the same for two runs of one policy
// (one template serves them), holds Render's pod without the run's
// ownership, and denies every connection (Managed, empty rules: never
// nil, the controller's open "secure default"); the claim carries the
// run's ownership and expiry; our own deny-all selects the template's
// pods; an outbound policy's template is Unmanaged.
func TestRenderClaim(t *testing.T) {
	p := claimPolicy(t, profiles.RoleAgent)
	ttl := backends.TTL(p, 0)
	run := func(name string, pid int) *claimed {
		c, err := RenderClaim(p, RunInfo{Name: name, Namespace: "triage", ParentPID: pid, ParentStart: "1", Host: "h", ExpiresAt: time.Now().Add(ttl)}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := run("triage-sandbox-agent-aaaa", 10), run("triage-sandbox-agent-bbbb", 11)
	if a.Template.Name != b.Template.Name || !strings.HasPrefix(a.Template.Name, "triage-sandbox-agent-") {
		t.Errorf("templates of two runs: %s and %s, want one", a.Template.Name, b.Template.Name)
	}
	if err := checkTemplate(a.Template, b.Template); err != nil {
		t.Errorf("checkTemplate of two runs' templates: %v", err)
	}
	spec, _ := json.Marshal(a.Template.Spec)
	if !strings.Contains(string(spec), `"networkPolicy":{}`) || a.Template.Spec.NetworkPolicyManagement != "Managed" {
		t.Errorf("template's network policy: %s", spec)
	}
	if strings.Contains(string(spec), profiles.LabelParentPID) || strings.Contains(string(spec), "triage-sandbox-agent-aaaa") {
		t.Errorf("the template holds the run's own data: %s", spec)
	}
	if a.Claim.Name != "triage-sandbox-agent-aaaa" || a.Claim.Annotations[profiles.LabelParentPID] != "10" || a.Claim.Spec.Lifecycle == nil ||
		a.Claim.Spec.WarmPoolRef.Name != a.Pool.Name || !a.ownPool || *a.Pool.Spec.Replicas != 0 {
		t.Errorf("claim %+v, pool %+v", a.Claim, a.Pool)
	}
	np := a.NetworkPolicy
	if np == nil || np.Spec.PodSelector.MatchLabels[labelTemplate] != a.Template.Name || len(np.Spec.Ingress)+len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 {
		t.Errorf("our deny-all: %+v", np)
	}
	if got := a.Template.Spec.PodTemplate.Metadata.Labels[labelTemplate]; got != a.Template.Name {
		t.Errorf("the template's pods are labelled %q, want %q", got, a.Template.Name)
	}
	pooled, err := RenderClaim(p, RunInfo{Name: "x", Namespace: "triage", ExpiresAt: time.Now().Add(ttl)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pooled.Pool.Name != a.Template.Name || *pooled.Pool.Spec.Replicas != 2 || pooled.ownPool {
		t.Errorf("the keeper's pool: %+v", pooled.Pool)
	}
	out := claimPolicy(t, profiles.RoleAgent)
	out.Network.Mode = policy.NetworkOutbound
	o, err := RenderClaim(out, RunInfo{Name: "y", Namespace: "triage"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if o.Template.Spec.NetworkPolicyManagement != "Unmanaged" || o.NetworkPolicy != nil {
		t.Errorf("outbound template: %+v, NetworkPolicy %v", o.Template.Spec, o.NetworkPolicy)
	}
}

// TestCheckTemplate: a template of our name whose spec was changed is
// refused.
func TestCheckTemplate(t *testing.T) {
	c, err := RenderClaim(claimPolicy(t, profiles.RoleAgent), RunInfo{Name: "a", Namespace: "triage"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var changed asTemplate
	raw, _ := json.Marshal(c.Template)
	_ = json.Unmarshal(raw, &changed)
	changed.Spec.NetworkPolicy = nil
	if err := checkTemplate(c.Template, &changed); err == nil {
		t.Error("a template without its network policy was accepted")
	}
}

// TestSamePod: the controller's pod is refused when it differs from the
// template's in what isolates it.
func TestSamePod(t *testing.T) {
	c, err := RenderClaim(claimPolicy(t, profiles.RoleReproducer), RunInfo{Name: "a", Namespace: "triage"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		edit func(*corev1.Pod)
		ok   bool
	}{
		{"as rendered", func(*corev1.Pod) {}, true},
		{"defaults the API server adds", func(p *corev1.Pod) {
			p.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
			p.Spec.SchedulerName = "default-scheduler"
		}, true},
		{"another image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "other" }, false},
		{"privileged", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Privileged = ptr(true) }, false},
		{"host network", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, false},
		{"token", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr(true) }, false},
		{"a host path", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, false},
		{"another container", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) }, false},
		{"injected env", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "X", Value: "1"})
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Pod.DeepCopy()
			tt.edit(got)
			if err := samePod(c.Pod, got); (err == nil) != tt.ok {
				t.Errorf("samePod: %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestRenderArtifactAgentSandbox: render shows the template, the pool and
// the claim, and no pod of our own.
func TestRenderArtifactAgentSandbox(t *testing.T) {
	b := &Backend{defNS: "triage"}
	a, err := b.Render(claimPolicy(t, profiles.RoleAgent), backends.Command{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := a.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sandbox_template"`, `"kind": "SandboxTemplate"`, `"sandbox_claim"`, `"kind": "SandboxClaim"`, `"sandbox_warm_pool"`, `"network_policy"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("render lacks %s", want)
		}
	}
	if strings.Contains(string(raw), `"pod":`) {
		t.Errorf("render shows a pod of our own")
	}
}
