//go:build linux

package kubernetes

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestPidsProvenOnNode: on the test node (its kubelet's podPidsLimit 512)
// a reproducer (pids 1024) starts with pids_limit proven, not accepted,
// says once that its processes stop at 512, and a fork past its pids
// fails in the pod below 512 processes: the kubelet's limit, nothing of
// ours, stops it. With the kubelet switched to no podPidsLimit (restarted;
// the node's pods stay) the start is refused in one line naming the node
// and the way out, and leaves no pod; accepting pids_limit then starts,
// saying it does not check.
func TestPidsProvenOnNode(t *testing.T) {
	c, n, image := node(t)
	ns := restrictedNamespace(t, c)
	b := backendFor(t, c, ns)
	var notices testenv.Buffer
	b.Notices = &notices
	p := rolePolicy(t, profiles.RoleReproducer, nil)
	p.Base.Image, p.Namespace, p.Workdir = image, ns, "/"
	// The deny-all proof is another test's (TestProofAtStart).
	p.Accepted = []policy.Capability{profiles.CapOwnLoopback}
	if weak, err := policy.Enforce(p, Name, Capabilities()); err != nil || len(weak) != 1 {
		t.Fatalf("Enforce = %v, %v; want own_loopback alone weakened", weak, err)
	}
	if p.Limits.Pids <= kubecluster.PodPidsLimit {
		t.Fatalf("the reproducer's pids %d is not above the node's %d: the test could not tell the two limits apart", p.Limits.Pids, kubecluster.PodPidsLimit)
	}
	ctx := context.Background()
	sb, err := b.Start(ctx, p, backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	if want := "podPidsLimit is 512, below the policy's pids 1024"; !strings.Contains(notices.String(), want) {
		t.Errorf("notices %q, want one saying %q", notices.String(), want)
	}
	forked, errno := forkPast(t, sb, p.Limits.Pids+64)
	t.Logf("fork failed (%s) after %d children", errno, forked)
	if errno == "" || forked >= kubecluster.PodPidsLimit || forked < kubecluster.PodPidsLimit-128 {
		t.Errorf("forked %d children (errno %q): want a failed fork just below the kubelet's %d", forked, errno, kubecluster.PodPidsLimit)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}

	if err := c.SetPodPidsLimit(n, -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.SetPodPidsLimit(n, kubecluster.PodPidsLimit); err != nil {
			t.Errorf("restoring the node's podPidsLimit: %v", err)
		}
	})
	// A fresh backend: the first one's read of the node stands ten minutes.
	b2 := backendFor(t, c, ns)
	b2.Notices = &notices
	_, err = b2.Start(ctx, p, backends.StartOptions{})
	if err == nil || !strings.Contains(err.Error(), "node "+n.Name+" sets no podPidsLimit") || !strings.Contains(err.Error(), `accept_weaker = ["pids_limit"]`) {
		t.Fatalf("Start on a node without podPidsLimit = %v; want a refusal naming the node and accept_weaker", err)
	}
	t.Logf("refused: %v", err)
	ok := testenv.Eventually(time.Minute, func() bool {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: ownerSelector})
		return err == nil && len(pods.Items) == 0
	})
	if !ok {
		t.Error("the refused start left its pod")
	}
	p.Accepted = append(p.Accepted, profiles.CapPidsLimit)
	sb, err = b2.Start(ctx, p, backends.StartOptions{})
	if err != nil {
		t.Fatalf("Start with pids_limit accepted: %v", err)
	}
	defer sb.Close(ctx)
	if want := "pids_limit accepted ([sandbox] accept_weaker): not checking the podPidsLimit of node " + n.Name; !strings.Contains(notices.String(), want) {
		t.Errorf("notices %q, want %q", notices.String(), want)
	}
}

// forkPast runs the selftest's fork probe (RES-01's) in sb up to limit
// children and returns how many it forked and the errno that stopped it.
func forkPast(t *testing.T, sb backends.Sandbox, limit int64) (int, string) {
	t.Helper()
	plan := protocol.ProbePlan{Steps: []protocol.ProbeStep{{ID: "fork", Op: "fork_bomb", Args: map[string]string{"cap": strconv.FormatInt(limit, 10)}}}}
	argv, err := protocol.Argv(launch.InitPath, protocol.EntryProbe, protocol.Probe{Tag: "pids", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut testenv.Buffer
	res, err := sb.Exec(context.Background(), backends.Command{Argv: argv, Timeout: time.Minute}, backends.Streams{Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := protocol.ParseProbeObservations(strings.NewReader(out.String()))
	if err != nil {
		t.Fatalf("the fork probe (exit %d): %v: %s %s", res.ExitCode, err, out.String(), errOut.String())
	}
	o, ok := obs["fork"]
	if !ok {
		t.Fatalf("the fork probe said nothing (exit %d): %s %s", res.ExitCode, out.String(), errOut.String())
	}
	forked, _ := strconv.Atoi(o.Values["forked"])
	return forked, o.Errno
}

// TestPidsReadNeedsNodesProxy: a user the API server denies get on
// nodes/proxy is refused in one line naming that permission; granted it
// (a ClusterRole of that alone), the same user reads the node's limit.
func TestPidsReadNeedsNodesProxy(t *testing.T) {
	c, n, _ := node(t)
	ctx := context.Background()
	user := "ts-pids-reader"
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	b, err := NewForConfig(cfg, "default")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.cli.podPidsLimit(ctx, n.Name)
	if err == nil || !strings.Contains(err.Error(), "the user needs get on nodes/proxy") || !strings.Contains(err.Error(), `accept_weaker = ["pids_limit"]`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("read without nodes/proxy = %v; want one line naming get on nodes/proxy and accept_weaker", err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}}}
	bind := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	var limit int64
	ok := testenv.Eventually(30*time.Second, func() bool {
		limit, err = b.cli.podPidsLimit(ctx, n.Name)
		return err == nil
	})
	if !ok || limit != kubecluster.PodPidsLimit {
		t.Fatalf("read with get on nodes/proxy = %d, %v; want %d", limit, err, kubecluster.PodPidsLimit)
	}
}
