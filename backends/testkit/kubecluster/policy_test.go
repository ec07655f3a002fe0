//go:build linux

package kubecluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPolicyController: kube-router's chains are in the node network
// namespace and never in the host's filter table (dockerd's); StopPolicy
// takes them and its sets out; the cluster's Stop ends the controller and
// the namespace with its rules.
func TestPolicyController(t *testing.T) {
	RequirePolicy(t)
	c, n, image := probeNode(t, "policy")
	if err := c.StartPolicy(n); err != nil {
		t.Fatal(err)
	}
	// A pod under a deny-all policy, so the controller makes its sets too.
	ctx := context.Background()
	sel := map[string]string{"app": "denied"}
	if _, err := c.Client.NetworkingV1().NetworkPolicies("policy").Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ip, err := c.ProbePod(ctx, "policy", "denied", n.Name, image, sel)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if ok, err := n.PolicyApplied(ip); err != nil || ok {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no firewall chain for the denied pod %s within a minute", ip)
		}
	}
	sets := func() string {
		t.Helper()
		out, err := n.InNetNS("ipset", "list", "-n").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(out)), " ")
	}
	if sets() == "" {
		t.Error("the controller made no ipset for the denied pod's policy")
	}
	nodeChains := func() string {
		t.Helper()
		got, err := policyChains("nsenter", "--net="+n.NetNS, "--", "iptables-save", "-t", "filter")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	hostChains := func() string {
		t.Helper()
		got, err := policyChains("iptables-save", "-t", "filter")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := nodeChains(); !strings.Contains(got, "KUBE-ROUTER-FORWARD") {
		t.Errorf("the node network namespace has no KUBE-ROUTER-FORWARD chain: %q", got)
	}
	if got := hostChains(); got != "" {
		t.Errorf("the host's filter table has the controller's chains: %s", got)
	}
	pid := policyPid(c)
	if pid == 0 {
		t.Fatal("no kube-router among the cluster's processes")
	}

	if err := c.StopPolicy(n); err != nil {
		t.Fatal(err)
	}
	if got := nodeChains(); got != "" {
		t.Errorf("after StopPolicy the node network namespace still has %s", got)
	}
	if got := sets(); got != "" {
		t.Errorf("after StopPolicy the node network namespace still has ipsets: %s", got)
	}
	if alive(pid) {
		t.Errorf("kube-router (pid %d) still runs after StopPolicy", pid)
	}

	// Again, then the cluster's Stop.
	if err := c.StartPolicy(n); err != nil {
		t.Fatal(err)
	}
	pid = policyPid(c)
	link := nsLink(t, n.NetNS)
	c.Stop()
	if alive(pid) {
		t.Errorf("kube-router (pid %d) still runs after Stop", pid)
	}
	if inNetNS(link) || mounted(n.NetNS) {
		t.Errorf("after Stop the node network namespace %s, with the controller's rules, is still held", link)
	}
	if got := hostChains(); got != "" {
		t.Errorf("after Stop the host's filter table has the controller's chains: %s", got)
	}
}

// policyPid is the running policy controller's pid (0 none).
func policyPid(c *Cluster) int {
	for _, p := range c.procs {
		if p.name == policyProc {
			return p.cmd.Process.Pid
		}
	}
	return 0
}

// alive says whether pid runs (not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	return len(b) > 0 && !strings.Contains(string(b), ") Z")
}

// TestReapTakesTheNodeNetNS: a dead owner's cluster is reaped with its
// node network namespace and the rules in it.
func TestReapTakesTheNodeNetNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network namespace needs root")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("no iptables")
	}
	reg, dir := t.TempDir(), t.TempDir()
	node := filepath.Join(dir, "node")
	if err := os.MkdirAll(node, 0o755); err != nil {
		t.Fatal(err)
	}
	ns, err := podNetNS(node)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := nsenter(ns, "iptables", "-N", "KUBE-ROUTER-FORWARD").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	link := nsLink(t, ns)
	// A stand-in for the controller: it names the cluster's directory.
	stray := exec.Command("tail", "-f", "/dev/null", filepath.Join(dir, "kubeconfig"))
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = stray.Wait(); close(done) }()
	t.Cleanup(func() { _ = stray.Process.Kill() })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(reg, itoa(dead.Process.Pid)+"-1-cccc"), []byte(dir), 0o600); err != nil {
		t.Fatal(err)
	}
	reapDead(reg)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the controller's stand-in still runs")
	}
	if mounted(ns) || inNetNS(link) {
		t.Errorf("the dead cluster's node network namespace %s is still held", link)
	}
}
