//go:build linux

package kubernetes

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestDenyAllEnforced: on the test node's pod network with its policy
// controller (kube-router) running, a pod under the backend's deny-all
// NetworkPolicy reaches neither a canary pod nor the node's bridge
// address, which a pod without the policy reaches (the control); with the
// controller stopped, the same pod reaches both (so the check can fail).
//
// Reached means the probe read the target's own token: every target
// listens, so it never answers with a reset, and a refused connect is the
// controller's reject (kube-router rejects with ICMP port unreachable), a
// timed-out one a drop. The targets' own record of whom they accepted
// says the same from their side.
func TestDenyAllEnforced(t *testing.T) {
	kubecluster.RequirePolicy(t)
	c, n, image := node(t)
	ns := restrictedNamespace(t, c)
	ctx := context.Background()
	probeImage, err := kubecluster.ProbeImage()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Import(probeImage); err != nil {
		t.Fatal(err)
	}

	r, err := Render(nodePolicy(t, profiles.RoleReproducer, ns, image), RunInfo{Name: "ts-denied", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if r.NetworkPolicy == nil {
		t.Fatal("the reproducer's policy rendered no NetworkPolicy")
	}
	np, err := c.Client.NetworkingV1().NetworkPolicies(ns).Create(ctx, r.NetworkPolicy, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := []string{"ts-denied", "ts-control", "ts-canary"}
	t.Cleanup(func() {
		for _, p := range pods {
			_ = c.Client.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{})
		}
		_ = c.Client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, np.Name, metav1.DeleteOptions{})
	})
	// The denied pod carries the labels the backend gives a sandbox's pod,
	// so the rendered policy selects it as it selects a sandbox.
	deniedIP, err := c.ProbePod(ctx, ns, "ts-denied", n.Name, probeImage, r.Pod.Labels)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ProbePod(ctx, ns, "ts-control", n.Name, probeImage, nil); err != nil {
		t.Fatal(err)
	}
	canaryIP, err := c.ProbePod(ctx, ns, "ts-canary", n.Name, probeImage, nil, "serve", "8080", "canary-token")
	if err != nil {
		t.Fatal(err)
	}
	canary := net.JoinHostPort(canaryIP, "8080")
	// Outside the node port range, which kube-router lets reach the node.
	bl, err := n.ListenTCP(kubecluster.BridgeAddress + ":8081")
	if err != nil {
		t.Fatal(err)
	}
	nodePeers := kubecluster.ServeToken(t, bl, "node-token")
	bridge := bl.Addr().String()

	canaryPeers := func() []string {
		t.Helper()
		logs, err := c.Client.CoreV1().Pods(ns).GetLogs("ts-canary", &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var from []string
		for _, line := range strings.Split(string(logs), "\n") {
			if addr, ok := strings.CutPrefix(line, "accepted from "); ok {
				host, _, _ := net.SplitHostPort(addr)
				from = append(from, host)
			}
		}
		return from
	}
	count := func(list []string, ip string) int {
		k := 0
		for _, a := range list {
			if a == ip {
				k++
			}
		}
		return k
	}
	connect := func(pod, addr string) kubecluster.Verdict {
		t.Helper()
		v, err := c.Connect(ctx, ns, pod, addr, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	if err := c.StartPolicy(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopPolicy(n) })
	if err := waitPolicy(n, deniedIP); err != nil {
		t.Fatal(err)
	}
	// The controls: a pod the policy does not select reaches both.
	if v := connect("ts-control", canary); !v.Reached("canary-token") {
		t.Fatalf("the control pod did not reach the canary %s: %q", canary, v)
	}
	if v := connect("ts-control", bridge); !v.Reached("node-token") {
		t.Fatalf("the control pod did not reach the node's bridge address %s: %q", bridge, v)
	}
	canaryBefore := count(canaryPeers(), deniedIP)
	for _, tt := range []struct{ what, addr, token string }{{"the canary pod", canary, "canary-token"}, {"the node's bridge address", bridge, "node-token"}} {
		v := connect("ts-denied", tt.addr)
		t.Logf("denied pod to %s, controller running: %q", tt.what, v)
		if v.Reached(tt.token) || (v != "refused" && v != "timeout") {
			t.Errorf("under the deny-all policy, with the controller running, %s (%s): %q; want refused or timeout", tt.what, tt.addr, v)
		}
	}
	if k := count(canaryPeers(), deniedIP) - canaryBefore; k != 0 {
		t.Errorf("the canary accepted %d connections from the denied pod %s", k, deniedIP)
	}
	for _, p := range nodePeers() {
		if strings.HasPrefix(p, deniedIP+":") {
			t.Errorf("the node's listener accepted a connection from the denied pod: %s", p)
		}
	}

	// The controller stopped: the same connects reach.
	if err := c.StopPolicy(n); err != nil {
		t.Fatal(err)
	}
	if v := connect("ts-denied", canary); !v.Reached("canary-token") {
		t.Errorf("with the controller stopped the denied pod did not reach the canary: %q", v)
	}
	if v := connect("ts-denied", bridge); !v.Reached("node-token") {
		t.Errorf("with the controller stopped the denied pod did not reach the node's bridge address: %q", v)
	}
	if k := count(canaryPeers(), deniedIP) - canaryBefore; k != 1 {
		t.Errorf("the canary accepted %d connections from the denied pod once the controller stopped, want 1", k)
	}
}

// waitPolicy waits until the controller sends the pod at ip through a
// firewall chain of its own.
func waitPolicy(n *kubecluster.Node, ip string) error {
	end := time.Now().Add(time.Minute)
	for time.Now().Before(end) {
		ok, err := n.PolicyApplied(ip)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the policy controller made no firewall chain for the pod at %s within a minute", ip)
}

// TestProofAtStart: Start's network check (proof.go) on the test node.
// With the policy controller running it passes and the sandbox runs; with
// it stopped, Start refuses with one line naming what was reached and the
// way out, and leaves no pod or NetworkPolicy; accepting own_loopback
// skips the check and says so once; a start cancelled during the check
// leaves nothing.
func TestProofAtStart(t *testing.T) {
	kubecluster.RequirePolicy(t)
	c, n, image := node(t)
	ns := restrictedNamespace(t, c)
	ctx := context.Background()
	unproven := func() *policy.Policy {
		p := rolePolicy(t, profiles.RoleReproducer, nil)
		p.Base.Image, p.Namespace, p.Workdir = image, ns, "/"
		// Not own_loopback: the backend declares it, proven at start.
		p.Accepted = append(p.Accepted, profiles.CapPidsLimit)
		if _, err := policy.Enforce(p, Name, Capabilities()); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fresh := func() (*Backend, *testenv.Buffer) {
		b := backendFor(t, c, ns)
		b.NodeName = n.Name
		var notes testenv.Buffer
		b.Notices = &notes
		return b, &notes
	}

	if err := c.StartPolicy(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopPolicy(n) })
	// A start cancelled during the check: refused, its pods gone.
	b, _ := fresh()
	// (The whole check takes about 2 s here: its pods run by then.)
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	sb, err := b.Start(cctx, unproven(), backends.StartOptions{})
	cancel()
	if err == nil {
		_ = sb.Close(ctx)
	}
	if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Fatalf("a start cancelled during the network check: %v, want the cancellation", err)
	}
	if left := ours(t, c, ns); len(left) != 0 {
		t.Errorf("the cancelled check left %v", left)
	}
	start := time.Now()
	sb, err = b.Start(ctx, unproven(), backends.StartOptions{})
	if err != nil {
		t.Fatalf("with the policy controller running: %v", err)
	}
	t.Logf("started with the proof in %s", time.Since(start).Round(time.Millisecond))
	var out testenv.Buffer
	if res, err := sb.Exec(ctx, backends.Command{Argv: []string{"echo", "ran"}}, backends.Streams{Stdout: &out, Stderr: &out}); err != nil || res.ExitCode != 0 || out.String() != "ran\n" {
		t.Errorf("the proven sandbox's command: %+v %v %q", res, err, out.String())
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The pass is cached: the next start makes no canary pod.
	start = time.Now()
	sb, err = b.Start(ctx, unproven(), backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started with the cached proof in %s", time.Since(start).Round(time.Millisecond))
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}

	if err := c.StopPolicy(n); err != nil {
		t.Fatal(err)
	}
	b, _ = fresh()
	sb, err = b.Start(ctx, unproven(), backends.StartOptions{})
	t.Logf("with the controller stopped: %v", err)
	if err == nil {
		_ = sb.Close(ctx)
		t.Fatal("Start ran a loopback-only sandbox on a cluster that does not enforce NetworkPolicy")
	}
	msg := err.Error()
	for _, want := range []string{"reached the check's listener pod", "does not enforce NetworkPolicy", `accept_weaker = ["own_loopback"]`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("the refusal is more than one line: %q", msg)
	}
	if left := ours(t, c, ns); len(left) != 0 {
		t.Errorf("the refused check left %v", left)
	}

	b, notes := fresh()
	p := unproven()
	p.Accepted = append(p.Accepted, profiles.CapOwnLoopback)
	for range 2 {
		sb, err := b.Start(ctx, p, backends.StartOptions{})
		if err != nil {
			t.Fatalf("with own_loopback accepted: %v", err)
		}
		if err := sb.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// (The policy accepts pids_limit too, which says a line of its own.)
	if got := notes.String(); strings.Count(got, "own_loopback accepted") != 1 {
		t.Errorf("accepting own_loopback said %q, want one line saying the check is skipped", got)
	}
}

// ours names the pods and NetworkPolicies of ours in ns.
func ours(t *testing.T, c *kubecluster.Cluster, ns string) []string {
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
	var out []string
	for _, p := range pods.Items {
		out = append(out, "pod "+p.Name)
	}
	for _, np := range nps.Items {
		out = append(out, "NetworkPolicy "+np.Name)
	}
	return out
}
