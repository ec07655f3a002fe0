//go:build linux

package kubecluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// probeNode starts a cluster and a node with the netprobe image (and the
// pause image, made from it when no other test made one), in namespace
// ns.
func probeNode(t *testing.T, ns string) (*Cluster, *Node, string) {
	t.Helper()
	Require(t, "kubelet")
	RequireNode(t)
	c := Start(t)
	n, _, image := startProbeNode(t, c, ns)
	return c, n, image
}

// startProbeNode starts c's node with the netprobe image, and namespace
// ns with its default service account.
func startProbeNode(t *testing.T, c *Cluster, ns string) (*Node, string, string) {
	t.Helper()
	image, err := ProbeImage()
	if err != nil {
		t.Fatal(err)
	}
	if exec.Command("docker", "image", "inspect", PauseImage).Run() != nil {
		if out, err := exec.Command("docker", "tag", image, PauseImage).CombinedOutput(); err != nil {
			t.Fatalf("docker tag: %v: %s", err, out)
		}
	}
	n, err := c.StartNode(image)
	if err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager runs to make the default service account.
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return n, ns, image
}

// TestPodNetwork: pods get addresses in PodCIDR on a bridge inside the
// node network namespace; a pod's one route is PodCIDR's, so it reaches
// another pod and the node's bridge address, and a listener on this
// machine's own address (which this test process reaches) fails by
// routing; the node namespace has no default route either; after Stop the
// namespace is gone.
func TestPodNetwork(t *testing.T) {
	c, n, image := probeNode(t, "podnet")
	ctx := context.Background()
	serverIP, err := c.ProbePod(ctx, "podnet", "server", n.Name, image, nil, "serve", "8080", "server-token")
	if err != nil {
		t.Fatal(err)
	}
	clientIP, err := c.ProbePod(ctx, "podnet", "client", n.Name, image, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, cidr, _ := net.ParseCIDR(PodCIDR)
	for _, ip := range []string{serverIP, clientIP} {
		if !cidr.Contains(net.ParseIP(ip)) {
			t.Errorf("pod address %s is not in %s", ip, PodCIDR)
		}
	}

	routes, err := c.Exec(ctx, "podnet", "client", "/netprobe", "routes")
	if err != nil {
		t.Fatal(err)
	}
	if want := PodCIDR + " via 0.0.0.0 dev eth0"; strings.TrimSpace(routes) != want {
		t.Errorf("the pod's routes:\n%s\nwant only %q", routes, want)
	}
	nodeRoutes, err := n.InNetNS("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(nodeRoutes), "\n") {
		if strings.HasPrefix(line, "default") {
			t.Errorf("the node network namespace has a default route: %s", line)
		}
	}

	// Pod to pod, and pod to the node's bridge address.
	if v, err := c.Connect(ctx, "podnet", "client", serverIP+":8080", 5*time.Second); err != nil || !v.Reached("server-token") {
		t.Errorf("pod to pod %s:8080: %q, %v", serverIP, v, err)
	}
	bl, err := n.ListenTCP(BridgeAddress + ":0")
	if err != nil {
		t.Fatal(err)
	}
	bridgePeers := ServeToken(t, bl, "bridge-token")
	if v, err := c.Connect(ctx, "podnet", "client", bl.Addr().String(), 5*time.Second); err != nil || !v.Reached("bridge-token") {
		t.Errorf("pod to the bridge address %s: %q, %v", bl.Addr(), v, err)
	}
	if got := bridgePeers(); len(got) != 1 || !strings.HasPrefix(got[0], clientIP+":") {
		t.Errorf("the bridge listener saw %v, want one connection from %s", got, clientIP)
	}

	// A listener on this machine's own address: this process reaches it,
	// the pod has no route to it.
	own, err := ownAddress()
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp4", own+":0")
	if err != nil {
		t.Fatal(err)
	}
	hostPeers := ServeToken(t, hl, "host-token")
	if conn, err := net.DialTimeout("tcp", hl.Addr().String(), 2*time.Second); err != nil {
		t.Fatalf("the control: this process cannot reach its own listener %s: %v", hl.Addr(), err)
	} else {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if strings.TrimSpace(line) != "host-token" {
			t.Fatalf("the control: the host listener said %q", line)
		}
	}
	hostPeers()
	if v, err := c.Connect(ctx, "podnet", "client", hl.Addr().String(), 5*time.Second); err != nil || v != "unreachable" {
		t.Errorf("pod to this machine's %s: %q, %v; want unreachable (no route)", hl.Addr(), v, err)
	}
	if got := hostPeers(); len(got) != 0 {
		t.Errorf("the host listener was reached from a pod: %v", got)
	}

	// Stop takes the namespace: nothing is mounted on its path and no
	// process is in it.
	link := nsLink(t, n.NetNS)
	c.Stop()
	if inNetNS(link) {
		t.Errorf("after Stop a process is still in the node network namespace %s", link)
	}
	if mounted(n.NetNS) {
		t.Errorf("after Stop the node network namespace is still bound at %s", n.NetNS)
	}
}

// nsLink is the network namespace bound at path, as /proc names it
// (net:[INODE]).
func nsLink(t *testing.T, path string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil || fs.Type != unix.NSFS_MAGIC {
		t.Fatalf("%s is not a namespace (filesystem %#x, %v)", path, fs.Type, err)
	}
	return fmt.Sprintf("net:[%d]", st.Ino)
}

// inNetNS says whether some process is in the network namespace link
// (net:[INODE]).
func inNetNS(link string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, p := range procs {
		if l, err := os.Readlink(p); err == nil && l == link {
			return true
		}
	}
	return false
}

// mounted says whether something is mounted at path.
func mounted(path string) bool {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}
