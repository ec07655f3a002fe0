//go:build linux

package kubecluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PauseImage is the pod sandbox image the node's containerd uses; the
// test builds it locally (no registry is reached).
const PauseImage = "triage-sandbox-test/pause:1"

// Node is a started node: a containerd of its own (CRI, runc) and a
// kubelet registered under Name.
type Node struct {
	Name string
	// Socket is its containerd's address (ctr -a SOCKET -n k8s.io ...).
	Socket string
	// RuntimeClasses are the RuntimeClasses made for the node's runtime
	// handlers besides runc (GVisorClass where scripts/gvisor.sh built
	// runsc and its shim: GVisorMissing).
	RuntimeClasses []string
	// NetNS is the node network namespace's path: the pod bridge and the
	// policy controller's rules are there (podnet.go).
	NetNS string
	// The kubelet's process and what runKubelet writes its config from.
	kubelet                         *proc
	dir, kubeconfig, ip, cgroupRoot string
	port                            int
}

// StartNode starts containerd and the kubelet on loopback (root only),
// gives its pods a network of their own (podnet.go),
// loads images into the node (docker save | ctr import) and waits until
// the node is Ready. Pods reach it by spec.nodeName, or, naming no node,
// by a binder standing in for the scheduler (binder.go).
func (c *Cluster) StartNode(images ...string) (*Node, error) {
	dir := filepath.Join(c.Dir, "node")
	n := &Node{Name: fmt.Sprintf("ts-node-%d", os.Getpid()), Socket: filepath.Join(dir, "containerd.sock")}
	for _, d := range []string{"cni-bin", "cni-conf", "containerd-root", "containerd-state", "kubelet", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	var err error
	if n.NetNS, err = podNetNS(dir); err != nil {
		return nil, err
	}
	if err := writeCNI(dir, n.NetNS); err != nil {
		return nil, err
	}
	if err := c.startContainerd(dir, n); err != nil {
		return nil, err
	}
	for _, img := range append([]string{PauseImage}, images...) {
		if err := n.Import(img); err != nil {
			return nil, err
		}
	}
	if err := c.startKubelet(dir, n); err != nil {
		return nil, err
	}
	if err := c.awaitNodeReady(n.Name); err != nil {
		return nil, err
	}
	for _, rc := range n.RuntimeClasses {
		if err := c.createRuntimeClass(rc, runscHandlerName); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopBinder = cancel
	go c.bindUnscheduled(ctx, n.Name)
	if err := c.forwardAPI(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

func (c *Cluster) startContainerd(dir string, n *Node) error {
	cfg := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  enable_selinux = false
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  # Some machines (this one's VM) refuse a negative oom_score_adj even to
  # root; the pause container's -998 then fails runc's init.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %q
        Root = %q
`, filepath.Join(dir, "containerd-root"), filepath.Join(dir, "containerd-state"), n.Socket, PauseImage,
		filepath.Join(dir, "cni-bin"), filepath.Join(dir, "cni-conf"), runcPath(), filepath.Join(dir, "runc-root"))
	if gvisorMissing() == "" {
		handler, err := runscHandler(dir)
		if err != nil {
			return err
		}
		cfg += handler
		n.RuntimeClasses = append(n.RuntimeClasses, GVisorClass)
	}
	path := filepath.Join(dir, "containerd.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := c.run("containerd", "containerd", "--config", path)
	if err != nil {
		return err
	}
	return p.waitSocket(n.Socket, time.Minute)
}

// Import loads a Docker image into the node's containerd.
func (n *Node) Import(image string) error {
	cmd := exec.Command("sh", "-c", `docker save "$1" | ctr -a "$2" -n k8s.io images import --no-unpack=false -`, "sh", image, n.Socket)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("loading image %s into the node: %v: %s", image, err, out)
	}
	return nil
}

func (c *Cluster) startKubelet(dir string, n *Node) error {
	crt, key, err := c.pki.issue("kubelet-client", "system:node:"+n.Name, []string{"system:masters"}, false)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubelet.kubeconfig")
	if err := writeKubeconfig(kubeconfig, fmt.Sprintf("https://127.0.0.1:%d", c.APIPort), c.pki.CAFile, crt, key); err != nil {
		return err
	}
	// The kubelet refuses a loopback node address, so it listens on one
	// of this machine's own (the API server dials it for attach, exec
	// and logs); nothing else is reached there.
	ip, err := ownAddress()
	if err != nil {
		return err
	}
	port := freePort()
	cgroupRoot, err := makeCgroupRoot(c.Dir)
	if err != nil {
		return err
	}
	n.dir, n.kubeconfig, n.ip, n.port, n.cgroupRoot = dir, kubeconfig, ip, port, cgroupRoot
	return c.runKubelet(n, PodPidsLimit)
}

// PodPidsLimit is the test kubelet's podPidsLimit: the agent's default
// pids (profiles.Limits), so both roles' defaults are proven (the
// reproducer's 1024 is above it: its processes stop at 512, said in a
// notice).
const PodPidsLimit = 512

// runKubelet writes the kubelet's configuration, with podPidsLimit
// (<= 0: none), and starts it.
//
// cgroupsPerQOS: pods get a pod cgroup, where alone the kubelet sets
// podPidsLimit (cgroup.go). makeIPTablesUtilChains: false: the kubelet
// runs in the host's network namespace and would leave its KUBE-FIREWALL
// and KUBE-KUBELET-CANARY chains in the host's iptables; the pods'
// network is the node's own namespace (podnet.go), which needs none of
// them. No in-place resize: the node's pods are never resized, and its
// path once ended the node mid-test (kubernetes/kubernetes#137999, with
// cgroupsPerQOS off).
func (c *Cluster) runKubelet(n *Node, podPidsLimit int64) error {
	var err error
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzPort: 0
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
evictionHard: {"memory.available": "1Mi", "nodefs.available": "1%%", "imagefs.available": "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
enforceNodeAllocatable: []
cgroupsPerQOS: true
cgroupRoot: %s
podPidsLimit: %d
makeIPTablesUtilChains: false
serializeImagePulls: false
localStorageCapacityIsolation: true
featureGates: {InPlacePodVerticalScaling: false}
`, n.ip, n.port, n.Socket, filepath.Join(n.dir, "pod-logs"), n.cgroupRoot, max(podPidsLimit, -1))
	path := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return err
	}
	n.kubelet, err = c.run("kubelet", filepath.Join(BinDir(), "kubelet"), "--config", path, "--kubeconfig", n.kubeconfig,
		"--hostname-override", n.Name, "--node-ip", n.ip, "--root-dir", filepath.Join(n.dir, "kubelet"),
		"--cert-dir", filepath.Join(n.dir, "kubelet", "pki"), "--v=1")
	return err
}

// SetPodPidsLimit restarts the node's kubelet with podPidsLimit limit
// (<= 0: none) and returns once the node is Ready again and its configz
// says so; the pods it runs stay (containerd runs them).
func (c *Cluster) SetPodPidsLimit(n *Node, limit int64) error {
	if n.kubelet == nil {
		return fmt.Errorf("node %s has no kubelet of this cluster's", n.Name)
	}
	n.kubelet.stop()
	c.procs = slices.DeleteFunc(c.procs, func(p *proc) bool { return p == n.kubelet })
	n.kubelet = nil
	if err := c.runKubelet(n, limit); err != nil {
		return err
	}
	if err := c.awaitNodeReady(n.Name); err != nil {
		return err
	}
	want := fmt.Sprintf(`"podPidsLimit":%d`, max(limit, -1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", "configz").DoRaw(ctx)
		if err == nil && strings.Contains(string(raw), want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s's configz does not say %s: %v: %.300s", n.Name, want, err, raw)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// awaitNodeReady waits until the node says it is Ready.
func (c *Cluster) awaitNodeReady(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("node %s not Ready: %s", name, c.logTail("kubelet"))
}

// waitSocket waits until path exists or the process ended.
func (p *proc) waitSocket(path string, d time.Duration) error {
	return p.waitUntil("made no "+path, d, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// RequireNode is Require plus what a node needs: root, the kubelet,
// containerd, runc and docker (to build and load the images).
func RequireNode(t interface {
	Helper()
	Skip(...any)
	Skipf(string, ...any)
	Fatal(...any)
}) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a kubelet needs root")
	}
	for _, b := range []string{"containerd", "ctr", "runc", "docker"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("no %s: %s", b, strings.TrimSpace(BuildScript+" installs it"))
		}
	}
}

// killTasks kills and deletes every container of the node's containerd
// (their shims then end), then the pod sandboxes' too.
func (c *Cluster) killTasks() {
	sock := filepath.Join(c.Dir, "node", "containerd.sock")
	if _, err := os.Stat(sock); err != nil {
		return
	}
	ctr := func(args ...string) string {
		out, _ := exec.Command("ctr", append([]string{"-a", sock, "-n", "k8s.io"}, args...)...).Output()
		return string(out)
	}
	for _, id := range strings.Fields(ctr("tasks", "ls", "-q")) {
		ctr("tasks", "kill", "-a", "-s", "SIGKILL", id)
	}
	for _, id := range strings.Fields(ctr("containers", "ls", "-q")) {
		for range 20 {
			if ctr("tasks", "rm", "-f", id); !strings.Contains(ctr("tasks", "ls", "-q"), id) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		ctr("containers", "rm", id)
	}
}

// unmountUnder lazily unmounts every mount below dir, deepest first
// (emptyDirs, root filesystems, network namespaces of the node).
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 {
			mp := strings.ReplaceAll(f[4], `\040`, " ")
			if strings.HasPrefix(mp, dir+"/") {
				points = append(points, mp)
			}
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = exec.Command("umount", "-l", points[i]).Run()
	}
}

// runcPath is the runc the node runs ($TRIAGE_SANDBOX_KUBE_RUNC, to
// debug with a wrapper, else runc on PATH).
func runcPath() string {
	if p := os.Getenv("TRIAGE_SANDBOX_KUBE_RUNC"); p != "" {
		return p
	}
	if p, err := exec.LookPath("runc"); err == nil {
		return p
	}
	return "runc"
}

// ownAddress is an IPv4 address of one of this machine's own interfaces
// (not loopback).
func ownAddress() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && ipn.IP.IsGlobalUnicast() {
			return ipn.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no IPv4 address on this machine's interfaces for the kubelet to listen on")
}
