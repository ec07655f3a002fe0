//go:build linux

package kubernetes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// The package's tests share one control plane, started on first use and
// stopped by TestMain.
var shared struct {
	once sync.Once
	c    *kubecluster.Cluster
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		shared.c.Stop()
	}
	// The images made for the node (named by the binary's digest: one per
	// build of it) go with the run that made them.
	images := []string{sharedNode.image}
	for img := range sharedNode.imported {
		images = append(images, img)
	}
	for _, img := range images {
		if img != "" {
			_ = exec.Command("docker", "image", "rm", img).Run()
		}
	}
	if shared.dir != "" && os.Getenv("TRIAGE_SANDBOX_KUBE_KEEP") == "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// cluster is the shared control plane (skipping under -short or without
// the binaries, see kubecluster.Require).
func cluster(t *testing.T) *kubecluster.Cluster {
	t.Helper()
	kubecluster.Require(t)
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "triage-sandbox-kube-"); shared.err == nil {
			shared.c, shared.err = kubecluster.Launch(shared.dir)
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the test cluster: %v", shared.err)
	}
	return shared.c
}

// restrictedNamespace makes a namespace of the test's own where the
// restricted Pod Security profile is enforced, with the default service
// account (no controller manager runs to make it); the cleanup deletes
// what is in it.
func restrictedNamespace(t *testing.T, c *kubecluster.Cluster) string {
	t.Helper()
	ctx := context.Background()
	name := strings.ToLower(fmt.Sprintf("ts-%s", strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { assertNothingLeft(t, c, name) })
	return name
}

// assertNothingLeft fails when a pod or NetworkPolicy of ours is left in ns.
func assertNothingLeft(t *testing.T, c *kubecluster.Cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: ownerSelector}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	nps, err := c.Client.NetworkingV1().NetworkPolicies(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items)+len(nps.Items) > 0 {
		t.Errorf("left in %s: %d pods, %d NetworkPolicies of ours", ns, len(pods.Items), len(nps.Items))
	}
}

func backendFor(t *testing.T, c *kubecluster.Cluster, ns string) *Backend {
	t.Helper()
	b, err := NewForConfig(c.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAdmittedRestricted: the pod rendered for each role is admitted by
// the real API server in a namespace enforcing the restricted profile,
// with its NetworkPolicy; removing the sandbox removes both.
func TestAdmittedRestricted(t *testing.T) {
	c := cluster(t)
	ns := restrictedNamespace(t, c)
	b := backendFor(t, c, ns)
	ctx := context.Background()
	for _, role := range profiles.Roles() {
		t.Run(string(role), func(t *testing.T) {
			p := rolePolicy(t, role, nil)
			p.Namespace = ns
			r, err := Render(p, b.runInfo(p, backendsTTL(p)))
			if err != nil {
				t.Fatal(err)
			}
			if err := b.create(ctx, r); err != nil {
				t.Fatalf("the restricted profile refused the %s pod: %v", role, err)
			}
			if _, err := c.Client.NetworkingV1().NetworkPolicies(ns).Get(ctx, r.NetworkPolicy.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("NetworkPolicy: %v", err)
			}
			if err := b.remove(ctx, r); err != nil {
				t.Fatal(err)
			}
			for _, get := range []func() error{
				func() error {
					_, err := c.Client.CoreV1().Pods(ns).Get(ctx, r.Pod.Name, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := c.Client.NetworkingV1().NetworkPolicies(ns).Get(ctx, r.NetworkPolicy.Name, metav1.GetOptions{})
					return err
				},
			} {
				if err := get(); !apierrors.IsNotFound(err) {
					t.Errorf("after remove: %v, want not found", err)
				}
			}
		})
	}
}

// TestWeakenedRejected: a pod weakened past the restricted profile (a
// capability added, privilege escalation, root) is refused by the API
// server, and the error is one line naming the profile.
func TestWeakenedRejected(t *testing.T) {
	c := cluster(t)
	ns := restrictedNamespace(t, c)
	b := backendFor(t, c, ns)
	for name, weaken := range map[string]func(*corev1.Pod){
		"capability added": func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_RAW"}
		},
		"privilege escalation": func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr(true) },
		"root": func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsUser, p.Spec.SecurityContext.RunAsNonRoot = ptr(int64(0)), ptr(false)
		},
		"unconfined seccomp": func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := rolePolicy(t, profiles.RoleReproducer, nil)
			p.Namespace = ns
			r, err := Render(p, b.runInfo(p, backendsTTL(p)))
			if err != nil {
				t.Fatal(err)
			}
			weaken(r.Pod)
			err = b.create(context.Background(), r)
			if err == nil {
				t.Fatal("the API server admitted the weakened pod")
			}
			if msg := err.Error(); !strings.Contains(msg, "restricted") || strings.Contains(msg, "\n") {
				t.Errorf("refusal = %q, want one line naming the restricted profile", msg)
			}
			t.Log(err)
			_ = b.remove(context.Background(), r)
		})
	}
}

// TestRuntimeClassHandler: the backend reads a RuntimeClass's handler from
// the API server, and takes the runtime's traits from it, not from the
// class's name; a class it cannot read leaves the name to stand for it.
func TestRuntimeClassHandler(t *testing.T) {
	c := cluster(t)
	ns := restrictedNamespace(t, c)
	b := backendFor(t, c, ns)
	ctx := context.Background()
	name := strings.ToLower("ts-sandboxed-" + strconv.Itoa(os.Getpid()))
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: "runsc"}
	if _, err := c.Client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.NodeV1().RuntimeClasses().Delete(ctx, name, metav1.DeleteOptions{}) })
	for class, want := range map[string]string{name: "runsc", "ts-no-such-class": "", "": ""} {
		if got := b.handler(ctx, class); got != want {
			t.Errorf("handler(%q) = %q, want %q", class, got, want)
		}
	}
	p := rolePolicy(t, profiles.RoleAgent, nil)
	p.Runtime = name
	info := b.runInfo(p, backendsTTL(p))
	info.Handler = b.handler(ctx, p.Runtime)
	if !info.Traits().PidsCountThreads {
		t.Errorf("class %s (handler runsc): traits %+v, want gVisor's", name, info.Traits())
	}
}
