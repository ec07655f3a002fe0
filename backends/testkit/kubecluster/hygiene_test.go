//go:build linux

package kubecluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// kubeletChains are the chains a kubelet with makeIPTablesUtilChains
// makes in the iptables of its network namespace (the host's, for this
// kit's kubelet).
var kubeletChains = []string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT"}

// hostKubeRules is every line of the host's iptables-save and
// ip6tables-save that names a KUBE- chain.
func hostKubeRules(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, bin := range []string{"iptables-save", "ip6tables-save"} {
		if _, err := exec.LookPath(bin); err != nil {
			continue
		}
		text, err := exec.Command(bin).Output()
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		table := ""
		for _, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(line, "*") {
				table = line
			}
			if strings.Contains(line, "KUBE-") {
				out = append(out, bin+" "+table+" "+line)
			}
		}
	}
	return out
}

// removeKubeletChains removes from the host's iptables what earlier test
// kubelets (this kit's, before makeIPTablesUtilChains: false) left there:
// with those chains in place a kubelet making them again would change
// nothing, and the check could not fail.
func removeKubeletChains() {
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, hook := range []string{"INPUT", "OUTPUT"} {
			for exec.Command(bin, "-D", hook, "-j", "KUBE-FIREWALL").Run() == nil {
			}
		}
		for _, table := range []string{"filter", "nat", "mangle"} {
			for _, c := range kubeletChains {
				_ = exec.Command(bin, "-t", table, "-F", c).Run()
				_ = exec.Command(bin, "-t", table, "-X", c).Run()
			}
		}
	}
}

// TestNodeLeavesHostUnchanged: a cluster with a node leaves the host's
// iptables as it found them, while it runs and after Stop (the kubelet
// runs in the host's network namespace and makes no chains there:
// makeIPTablesUtilChains: false), and no cgroup of its node behind. Its
// kubelet runs with podPidsLimit (configz says so) and a pod's cgroup has
// it as pids.max.
func TestNodeLeavesHostUnchanged(t *testing.T) {
	Require(t, "kubelet")
	RequireNode(t)
	if _, err := exec.LookPath("iptables-save"); err != nil {
		t.Fatal("no iptables-save: the check cannot read the host's iptables")
	}
	removeKubeletChains()
	before := hostKubeRules(t)
	dir := t.TempDir()
	c, err := Launch(dir)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	n, ns, image := startProbeNode(t, c, "hygiene")
	if _, err := c.ProbePod(context.Background(), ns, "p", n.Name, image, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", "configz").DoRaw(context.Background())
	if err != nil || !strings.Contains(string(raw), `"podPidsLimit":512`) || !strings.Contains(string(raw), `"makeIPTablesUtilChains":false`) {
		t.Errorf("the node's configz: %v: %.400s; want podPidsLimit 512 and makeIPTablesUtilChains false", err, raw)
	}
	if got := podPidsMax(t, dir); !slices.Contains(got, "512") {
		t.Errorf("the node's pod cgroups have pids.max %v, want 512 among them", got)
	}
	// The kubelet makes its chains at start; give it time to.
	time.Sleep(2 * time.Second)
	if during := hostKubeRules(t); !slices.Equal(during, before) {
		t.Errorf("with the node running, the host's iptables have KUBE- rules %q, before %q%s", during, before, otherKubelets(dir))
	}
	c.Stop()
	stopped = true
	if after := hostKubeRules(t); !slices.Equal(after, before) {
		t.Errorf("after Stop, the host's iptables have KUBE- rules %q, before %q%s", after, before, otherKubelets(dir))
	}
	for _, d := range cgroupDirs(dir) {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("the node's cgroup %s is left after Stop", d)
		}
	}
}

// podPidsMax is pids.max of each pod cgroup under the node's cgroup root
// (pods/kubepods/.../podUID).
func podPidsMax(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, d := range cgroupDirs(dir) {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() && strings.HasPrefix(e.Name(), "pod") {
				if v, err := os.ReadFile(filepath.Join(p, "pids.max")); err == nil {
					out = append(out, strings.TrimSpace(string(v)))
				}
			}
			return nil
		})
	}
	return out
}

// otherKubelets names the kubelets running on this machine that are not
// this cluster's (another test process's, which may make those chains),
// for a failure's message.
func otherKubelets(dir string) string {
	procs, _ := os.ReadDir("/proc")
	var out []string
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(string(cmdline), "\x00")
		if filepath.Base(argv[0]) == "kubelet" && !strings.Contains(string(cmdline), dir+"/") {
			out = append(out, p.Name())
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; other kubelets run here (pids " + strings.Join(out, ", ") + "): one made before makeIPTablesUtilChains: false makes them"
}
