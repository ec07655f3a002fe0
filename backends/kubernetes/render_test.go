package kubernetes

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

func rolePolicy(t testing.TB, role profiles.Role, edit func(*config.File)) *policy.Policy {
	t.Helper()
	cfg := config.Default(t.TempDir())
	// A pod has the image's own toolchain: the host's is on another machine.
	image := "image"
	cfg.Sandbox.Toolchain = &image
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
				"holder as the one process": len(spec.Containers) == 1 && strings.HasSuffix(c.Command[0], "triage-sandbox") && c.Command[1] == "__hold",
				"the unpacker, confined alike": len(spec.InitContainers) == 1 && spec.InitContainers[0].Command[1] == "__unpack" &&
					reflect.DeepEqual(spec.InitContainers[0].SecurityContext, sc) && reflect.DeepEqual(spec.InitContainers[0].Resources, c.Resources),
				"deny-all NetworkPolicy": r.NetworkPolicy != nil && len(r.NetworkPolicy.Spec.Ingress) == 0 && len(r.NetworkPolicy.Spec.Egress) == 0 && len(r.NetworkPolicy.Spec.PolicyTypes) == 2,
			}
			for name, ok := range checks {
				if !ok {
					t.Errorf("%s: not so in the rendered pod", name)
				}
			}
			checkVolumes(t, p, spec)
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
		"host toolchain": func(p *policy.Policy) {
			p.Mounts = append(p.Mounts, policy.Mount{Path: "/usr", ReadOnly: true, Kind: "dir", System: true})
		},
		"the host toolchain's /etc/alternatives": func(p *policy.Policy) {
			p.Mounts = append(p.Mounts, policy.Mount{Path: "/etc/alternatives", ReadOnly: true, Kind: "dir", System: true})
		},
		"a system python's /usr": func(p *policy.Policy) {
			p.Mounts = append(p.Mounts, policy.Mount{Path: "/usr", ReadOnly: true, Kind: "dir", System: true, Why: "python environment"})
		},
		"a discarded single file": func(p *policy.Policy) {
			p.Mounts = append(p.Mounts, policy.Mount{Path: "/etc/x.conf", ReadOnly: true, Kind: "file", Discard: true})
		},
	} {
		p := rolePolicy(t, profiles.RoleReproducer, nil)
		edit(p)
		if _, err := Render(p, info("x", "ns")); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Render err = %v, want one line", name, err)
		}
	}
}

// TestRenderCopiesASystemDirInsideATree: a system directory below a
// system tree (read_only = ["/usr/local/go"]) is copied like any other
// read-only directory; only a whole tree is refused.
func TestRenderCopiesASystemDirInsideATree(t *testing.T) {
	p := rolePolicy(t, profiles.RoleReproducer, nil)
	p.Mounts = append(p.Mounts, policy.Mount{Path: "/usr/local/go", ReadOnly: true, Kind: "dir", System: true, Why: "[sandbox] read_only"})
	dirs, err := copiedDirs(p)
	if err != nil || !slices.ContainsFunc(dirs, func(d copiedDir) bool { return d.Path == "/usr/local/go" }) {
		t.Errorf("copied %+v, %v; want /usr/local/go among them", dirs, err)
	}
}

// TestPackSpecLeavesOutHidden: a mount's hidden directory (a venv's
// unused base site-packages) is masked on the other backends; a pod's
// copy leaves it out.
func TestPackSpecLeavesOutHidden(t *testing.T) {
	p := rolePolicy(t, profiles.RoleReproducer, nil)
	const base, site = "/opt/py/3.11.7", "/opt/py/3.11.7/lib/python3.11/site-packages"
	p.Mounts = append(p.Mounts, policy.Mount{Path: base, ReadOnly: true, Kind: "dir", Hidden: []string{site}, Why: "base"})
	dirs, err := copiedDirs(p)
	if err != nil {
		t.Fatal(err)
	}
	spec := packSpec(p, dirs)
	if !slices.Contains(spec.Skip, site) || !slices.ContainsFunc(spec.Paths, func(sp stage.Path) bool { return sp.Path == base }) {
		t.Errorf("pack paths %+v skip %q: want %s copied without %s", spec.Paths, spec.Skip, base, site)
	}
}

// TestEnforceLoopbackProvenAtStart: the policy layer lets a loopback-only
// role with its pids limit through (own_loopback and pids_limit are
// declared: Start proves them, proof.go and pids.go); an accepted one is
// weakened (Start then skips its proof).
func TestEnforceLoopbackProvenAtStart(t *testing.T) {
	p := rolePolicy(t, profiles.RoleReproducer, nil)
	if !slices.Contains(p.Requirements(), profiles.CapOwnLoopback) || !slices.Contains(p.Requirements(), profiles.CapPidsLimit) {
		t.Fatalf("the reproducer requires %v, want own_loopback and pids_limit", p.Requirements())
	}
	if weak, err := policy.Enforce(p, Name, Capabilities()); err != nil || len(weak) != 0 {
		t.Fatalf("Enforce = %v, %v; want neither weakened nor refused", weak, err)
	}
	for _, c := range []policy.Capability{profiles.CapPidsLimit, profiles.CapOwnLoopback} {
		p.Accepted = []policy.Capability{c}
		if weak, err := policy.Enforce(p, Name, Capabilities()); err != nil || !slices.Equal(weak, []policy.Capability{c}) {
			t.Errorf("Enforce with %s accepted = %v, %v; want [%s] weakened (its proof skipped)", c, weak, err, c)
		}
	}
}

// TestRenderExec: a command becomes the supervisor's exec in the holder.
func TestRenderExec(t *testing.T) {
	p := rolePolicy(t, profiles.RoleAgent, nil)
	e, err := RenderExec(p, backends.Command{Argv: []string{"true"}}, runtimes.Of(""))
	if err != nil || e.Container != holderContainer || e.Command[1] != "__exec" {
		t.Fatalf("RenderExec = %+v, %v", e, err)
	}
}

// TestRenderExecUnderGVisor: a pod whose RuntimeClass's handler runs
// gVisor gets gVisor's process limit from its supervisor (a pod's spec has
// no rlimits), the one GVisorLimits gives the docker and oci backends; a
// native handler gets none (the name of the class counts only where its
// handler is not known).
func TestRenderExecUnderGVisor(t *testing.T) {
	p := rolePolicy(t, profiles.RoleAgent, nil)
	gvisorNProc, _, _ := runtimes.GVisorLimits(runtimes.Of("runsc"), p)
	tests := []struct {
		class, handler string
		want           int64
	}{
		{"", "", 0},
		{"sandboxed", "runsc", gvisorNProc},
		{"gvisor", "gvisor", gvisorNProc},
		{"gvisor", "", gvisorNProc},
		{"gvisor", "runc", 0},
		{"kata", "kata", 0},
	}
	for _, tt := range tests {
		i := info("x", "ns")
		i.RuntimeClass, i.Handler = tt.class, tt.handler
		e, err := RenderExec(p, backends.Command{Argv: []string{"true"}}, i.Traits())
		if err != nil {
			t.Fatal(err)
		}
		spec, err := protocol.DecodeExec(e.Command[2:])
		if err != nil {
			t.Fatal(err)
		}
		var nproc int64
		for _, r := range spec.Rlimits {
			if r.Name == "NPROC" {
				nproc = int64(r.Value)
			}
		}
		if nproc != tt.want {
			t.Errorf("class %q handler %q: nproc %d, want %d", tt.class, tt.handler, nproc, tt.want)
		}
	}
	if gvisorNProc <= 0 || gvisorNProc >= p.Limits.Pids {
		t.Errorf("gVisor's process limit for a %d MiB agent is %d (pids %d): a task costs gVisor memory, so it is below pids", p.Limits.Memory>>20, gvisorNProc, p.Limits.Pids)
	}
}

func backendsTTL(p *policy.Policy) time.Duration { return backends.TTL(p, 0) }

// checkVolumes: every volume an emptyDir, bounded in memory or a copy of
// a read-only directory that the holder mounts read-only; every
// read-only directory of the policy is such a copy.
func checkVolumes(t *testing.T, p *policy.Policy, spec corev1.PodSpec) {
	t.Helper()
	c := spec.Containers[0]
	readOnly := map[string]string{}
	for _, m := range c.VolumeMounts {
		if m.ReadOnly {
			readOnly[m.Name] = m.MountPath
		}
	}
	for _, v := range spec.Volumes {
		bounded := v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory
		if v.HostPath != nil || v.EmptyDir == nil || !bounded && readOnly[v.Name] == "" {
			t.Errorf("volume %s is neither a size-bounded memory emptyDir nor a read-only copy: %+v", v.Name, v.VolumeSource)
		}
	}
	for _, m := range p.Mounts {
		if m.ReadOnly && !m.Discard && !slices.Contains(slices.Collect(maps.Values(readOnly)), m.Path) {
			t.Errorf("read-only %s (%s) is not a read-only copy in the pod", m.Path, m.Why)
		}
	}
}
