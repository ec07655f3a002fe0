package kubernetes

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func rolePolicy(t testing.TB, role profiles.Role, edit func(*config.File)) *policy.Policy {
	t.Helper()
	cfg := config.Default(t.TempDir())
	if edit != nil {
		edit(cfg)
	}
	p, err := policy.Build(cfg, role, policy.Host{Home: "/home/alice", UID: 1000, GID: 1000, OS: "linux"}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func info(name, ns string) RunInfo {
	return RunInfo{Name: name, Namespace: ns, ParentPID: 1, Host: "h", ExpiresAt: time.Now().Add(time.Hour)}
}

// TestRenderRestricted: each role's pod is what the restricted Pod
// Security profile asks, field by field (the API-level test has the real
// API server judge it).
func TestRenderRestricted(t *testing.T) {
	for _, role := range profiles.Roles() {
		t.Run(string(role), func(t *testing.T) {
			p := rolePolicy(t, role, nil)
			r, err := Render(p, info("x", "ns"))
			if err != nil {
				t.Fatal(err)
			}
			spec := r.Pod.Spec
			c := spec.Containers[0]
			sc := c.SecurityContext
			checks := map[string]bool{
				"no service account token":  spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken,
				"no host namespaces":        !spec.HostNetwork && !spec.HostPID && !spec.HostIPC,
				"runAsNonRoot":              *spec.SecurityContext.RunAsNonRoot && *sc.RunAsNonRoot && *spec.SecurityContext.RunAsUser != 0,
				"seccomp RuntimeDefault":    sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault,
				"drop ALL":                  len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL" && len(sc.Capabilities.Add) == 0,
				"no privilege escalation":   !*sc.AllowPrivilegeEscalation && !*sc.Privileged,
				"read-only root":            *sc.ReadOnlyRootFilesystem,
				"limits":                    !c.Resources.Limits.Memory().IsZero() && !c.Resources.Limits.Cpu().IsZero(),
				"deadline":                  spec.ActiveDeadlineSeconds != nil && *spec.ActiveDeadlineSeconds > 0,
				"lifeline on stdin":         c.Stdin && c.StdinOnce && !c.TTY,
				"holder as the one process": len(spec.Containers) == 1 && len(spec.InitContainers) == 0 && strings.HasSuffix(c.Command[0], "triage-sandbox") && c.Command[1] == "__hold",
				"deny-all NetworkPolicy":    r.NetworkPolicy != nil && len(r.NetworkPolicy.Spec.Ingress) == 0 && len(r.NetworkPolicy.Spec.Egress) == 0 && len(r.NetworkPolicy.Spec.PolicyTypes) == 2,
			}
			for name, ok := range checks {
				if !ok {
					t.Errorf("%s: not so in the rendered pod", name)
				}
			}
			for _, v := range spec.Volumes {
				if v.HostPath != nil || v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
					t.Errorf("volume %s is not a size-bounded memory emptyDir: %+v", v.Name, v.VolumeSource)
				}
			}
		})
	}
}

// TestRenderNetworkOn: a sandbox with network has no deny-all policy.
func TestRenderNetworkOn(t *testing.T) {
	p := rolePolicy(t, profiles.RoleAgent, nil)
	p.Network.Mode = policy.NetworkOutbound
	r, err := Render(p, info("x", "ns"))
	if err != nil || r.NetworkPolicy != nil {
		t.Fatalf("Render = %+v, %v; want no NetworkPolicy", r, err)
	}
}

// TestRenderRefuses: what a pod cannot be is refused with one line.
func TestRenderRefuses(t *testing.T) {
	for name, edit := range map[string]func(*policy.Policy){
		"root":         func(p *policy.Policy) { p.User.UID = 0 },
		"host root":    func(p *policy.Policy) { p.Base = policy.Base{Kind: policy.BaseHost, HostRoots: []string{"/usr"}} },
		"host network": func(p *policy.Policy) { p.Network.Mode = policy.NetworkHost },
	} {
		p := rolePolicy(t, profiles.RoleReproducer, nil)
		edit(p)
		if _, err := Render(p, info("x", "ns")); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Render err = %v, want one line", name, err)
		}
	}
}

// TestEnforceRefusesLoopback: the policy layer refuses a loopback-only
// role on this backend (no NetworkPolicy controller is known) unless it is
// accepted as weaker.
func TestEnforceRefusesLoopback(t *testing.T) {
	p := rolePolicy(t, profiles.RoleReproducer, nil)
	_, err := policy.Enforce(p, Name, Capabilities())
	if err == nil || !strings.Contains(err.Error(), "own_loopback") || !strings.Contains(err.Error(), "accept_weaker") {
		t.Fatalf("Enforce = %v, want a refusal naming own_loopback and accept_weaker", err)
	}
	p.Accepted = []policy.Capability{profiles.CapOwnLoopback, profiles.CapPidsLimit}
	if weak, err := policy.Enforce(p, Name, Capabilities()); err != nil || len(weak) == 0 {
		t.Fatalf("Enforce with accept_weaker = %v, %v", weak, err)
	}
}

// TestRenderExec: a command becomes the supervisor's exec in the holder.
func TestRenderExec(t *testing.T) {
	p := rolePolicy(t, profiles.RoleAgent, nil)
	e, err := RenderExec(p, backends.Command{Argv: []string{"true"}})
	if err != nil || e.Container != holderContainer || e.Command[1] != "__exec" {
		t.Fatalf("RenderExec = %+v, %v", e, err)
	}
}

func backendsTTL(p *policy.Policy) time.Duration { return backends.TTL(p, 0) }
