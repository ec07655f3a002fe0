//go:build linux

package kubecluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The policy controller that enforces NetworkPolicy on the node is
// kube-router, run with its firewall only: one binary from the Go module
// proxy (scripts/kuberouter.sh builds it, as scripts/kube.sh builds the
// cluster), needing nothing of the cluster but the API and the node
// object, and enforcing with iptables and ipset on the pods' own
// addresses, which suits Debian's bridge plugin; Calico and Cilium bring
// their own data plane (BPF, a node agent, CRDs), and Antrea an OVS
// switch. kube-router rewrites the whole filter table it works on
// (iptables-save, then iptables-restore without --noflush), which would
// race dockerd's rules on the host: here its iptables and ipset commands
// are wrappers that run the real ones inside the node network namespace
// (podnet.go), so its chains and sets exist there only and go with it.

// KubeRouterVersion is the kube-router scripts/kuberouter/go.mod pins (a
// test checks they agree).
const KubeRouterVersion = "v2.1.0"

// PolicyScript builds and caches the policy controller.
const PolicyScript = "scripts/kuberouter.sh"

// KubeRouterDir is where scripts/kuberouter.sh put kube-router:
// $TRIAGE_SANDBOX_KUBE_ROUTER_DIR, else
// /var/cache/triage-sandbox/kube-router/VERSION.
func KubeRouterDir() string {
	if d := os.Getenv("TRIAGE_SANDBOX_KUBE_ROUTER_DIR"); d != "" {
		return d
	}
	return filepath.Join("/var/cache/triage-sandbox/kube-router", KubeRouterVersion)
}

// policyTools are the commands kube-router runs that must act inside the
// node network namespace.
var policyTools = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore", "ipset"}

// PolicyMissing says what the node's policy controller lacks, as one line
// with the fix ("" nothing).
func PolicyMissing() string {
	var missing []string
	if fi, err := os.Stat(filepath.Join(KubeRouterDir(), "kube-router")); err != nil || fi.Mode()&0o111 == 0 {
		missing = append(missing, filepath.Join(KubeRouterDir(), "kube-router")+" (build it with "+PolicyScript+", cached afterwards)")
	}
	for _, t := range []string{"iptables", "ipset", "nsenter"} {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t+" (Debian "+map[string]string{"iptables": "iptables", "ipset": "ipset", "nsenter": "util-linux"}[t]+"; "+BuildScript+" installs it)")
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "no NetworkPolicy controller for the test node: missing " + strings.Join(missing, ", ")
}

// RequirePolicy skips t, or fails it where the cluster is required (as
// Require), when the policy controller cannot run.
func RequirePolicy(t interface {
	Helper()
	Skip(...any)
	Fatal(...any)
}) {
	t.Helper()
	if msg := PolicyMissing(); msg != "" {
		if os.Getenv("CI") != "" || os.Getenv("TRIAGE_SANDBOX_REQUIRE_KUBE") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; set TRIAGE_SANDBOX_REQUIRE_KUBE=1 to make this a failure")
	}
}

// policyProc names the controller's process among the cluster's.
const policyProc = "kube-router"

// StartPolicy starts kube-router's firewall for node n, its rules inside
// the node network namespace, and returns once its top chains are there.
// The cluster's Stop ends it; StopPolicy ends it earlier.
func (c *Cluster) StartPolicy(n *Node) error {
	if msg := PolicyMissing(); msg != "" {
		return fmt.Errorf("%s", msg)
	}
	bin := filepath.Join(c.Dir, "node", "policy-bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for _, t := range policyTools {
		real, err := exec.LookPath(t)
		if err != nil {
			if strings.HasPrefix(t, "ip6") {
				continue // IPv6 is off (--enable-ipv6=false)
			}
			return err
		}
		script := fmt.Sprintf("#!/bin/sh\nexec nsenter --net=%s -- %s \"$@\"\n", shellQuote(n.NetNS), shellQuote(real))
		if err := os.WriteFile(filepath.Join(bin, t), []byte(script), 0o755); err != nil {
			return err
		}
	}
	p, err := c.runEnv(policyProc, []string{"PATH=" + bin + ":" + os.Getenv("PATH")},
		filepath.Join(KubeRouterDir(), "kube-router"), "--kubeconfig", c.Kubeconfig,
		"--hostname-override", n.Name, "--run-firewall=true", "--run-router=false",
		"--run-service-proxy=false", "--run-loadbalancer=false", "--enable-ipv4=true", "--enable-ipv6=false",
		"--health-port=0", "--metrics-port=0", "--service-cluster-ip-range", serviceRange, "--v=1")
	if err != nil {
		return err
	}
	return p.waitUntil("made no KUBE-ROUTER-FORWARD chain in the node network namespace", time.Minute, func() bool {
		out, err := n.InNetNS("iptables-save", "-t", "filter").Output()
		return err == nil && strings.Contains(string(out), "\n-A FORWARD -m comment --comment \"kube-router netpol")
	})
}

// StopPolicy stops the policy controller and takes its rules and sets out
// of the node network namespace: the node then enforces no NetworkPolicy,
// as a cluster without a controller.
func (c *Cluster) StopPolicy(n *Node) error {
	for i, p := range c.procs {
		if p.name == policyProc {
			p.stop()
			c.procs = append(c.procs[:i], c.procs[i+1:]...)
			break
		}
	}
	// The namespace is the node's alone: all of its filter table is the
	// controller's.
	for _, argv := range [][]string{{"iptables", "-F"}, {"iptables", "-X"}, {"ipset", "destroy"}} {
		if out, err := n.InNetNS(argv...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s in the node network namespace: %v: %s", strings.Join(argv, " "), err, out)
		}
	}
	return nil
}

// PolicyApplied says whether the controller's rules in the node network
// namespace send the pod at ip through a firewall chain of its own (it
// does so for a pod some NetworkPolicy selects, once it has synced).
func (n *Node) PolicyApplied(ip string) (bool, error) {
	out, err := n.InNetNS("iptables-save", "-t", "filter").Output()
	if err != nil {
		return false, fmt.Errorf("iptables-save in the node network namespace: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "-s "+ip+"/32 ") && strings.Contains(line, "-j KUBE-POD-FW-") {
			return true, nil
		}
	}
	return false, nil
}
