//go:build linux

package kubecluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The node's pod network is Debian's CNI bridge and host-local plugins,
// run inside a network namespace of the cluster's own (the node network
// namespace), not the host's: the bridge, its address and every rule the
// policy controller writes (policy.go) live there, so nothing of it can
// touch dockerd's bridges or iptables rules, a second cluster on the same
// machine has a namespace of its own (the same pod range does not clash),
// and the namespace has no interface but its loopback and the bridge: a
// pod reaches other pods and the bridge address, and there is no route
// off this machine even when the policy fails. The namespace goes with the
// cluster (Stop, or the reaper: both unmount what is below the cluster's
// directory).
const (
	// PodCIDR is the pods' range. 10.213.0.0/24: private, and none of the
	// ranges a cluster or dockerd on this machine picks by default
	// (dockerd 172.17-31.0.0/16 and 192.168.0.0/16, flannel 10.244/16,
	// k3s 10.42/16, services 10.96/12 and this cluster's 10.0.0.0/24); the
	// range is only ever routed inside the node network namespace, so even
	// a clash would not reach another network.
	PodCIDR = "10.213.0.0/24"
	// BridgeAddress is the node's address on the pod bridge (the only
	// address of the node a pod can route to).
	BridgeAddress = "10.213.0.1"
	// podBridge is the bridge's name inside the node network namespace.
	podBridge = "ts-pods0"
	// podNetwork is the CNI network's name.
	podNetwork = "ts-pods"
)

// podNetNS makes the node network namespace, bound at dir/netns, with its
// loopback up, and returns its path.
func podNetNS(dir string) (string, error) {
	path := filepath.Join(dir, "netns")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return "", err
	}
	if out, err := exec.Command("unshare", "--net="+path, "true").CombinedOutput(); err != nil {
		return "", fmt.Errorf("making the node network namespace: %v: %s", err, out)
	}
	if out, err := nsenter(path, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return "", fmt.Errorf("bringing up the node network namespace's loopback: %v: %s", err, out)
	}
	return path, nil
}

// nsenter is argv run in the network namespace bound at netns.
func nsenter(netns string, argv ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + netns, "--"}, argv...)...)
}

// cniDir is where Debian's containernetworking-plugins are.
const cniDir = "/usr/lib/cni"

// writeCNI writes the node's CNI configuration and plugin directory: the
// bridge plugin runs inside the node network namespace (a wrapper enters
// it; the plugin moves the pod's end of the veth into the pod's namespace
// by its path as usual), host-local hands out PodCIDR with its state under
// dir. isGateway gives the bridge BridgeAddress; no default route
// (isDefaultGateway) and no masquerade (ipMasq): a pod's one route is
// PodCIDR's own.
func writeCNI(dir, netns string) error {
	bin := filepath.Join(dir, "cni-bin")
	for _, p := range []string{"loopback", "host-local"} {
		if err := os.Symlink(filepath.Join(cniDir, p), filepath.Join(bin, p)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nexec nsenter --net=%s -- %s \"$@\"\n", shellQuote(netns), shellQuote(filepath.Join(cniDir, "bridge")))
	if err := os.WriteFile(filepath.Join(bin, "bridge"), []byte(wrapper), 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[{"type":"bridge","bridge":%q,`+
		`"isGateway":true,"isDefaultGateway":false,"ipMasq":false,"hairpinMode":false,`+
		`"ipam":{"type":"host-local","ranges":[[{"subnet":%q,"gateway":%q}]],"dataDir":%q}}]}`,
		podNetwork, podBridge, PodCIDR, BridgeAddress, filepath.Join(dir, "cni-ipam"))
	return os.WriteFile(filepath.Join(dir, "cni-conf", "10-"+podNetwork+".conflist"), []byte(conf), 0o644)
}

// InNetNS is argv run in the node network namespace (where the pod bridge
// and the policy controller's rules are).
func (n *Node) InNetNS(argv ...string) *exec.Cmd { return nsenter(n.NetNS, argv...) }

// ListenTCP listens on addr (BridgeAddress:PORT) inside the node network
// namespace, for a test's listener a pod may try to reach: a socket stays
// in the namespace it was made in, so the thread enters it for the
// listen and goes back.
func (n *Node) ListenTCP(addr string) (net.Listener, error) {
	runtime.LockOSThread()
	host, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer host.Close()
	target, err := os.Open(n.NetNS)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering the node network namespace: %w", err)
	}
	// IP_FREEBIND: the bridge and its address come with the first pod,
	// after the API server's forwarder (apiforward.go) listens.
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_FREEBIND, 1) }); err != nil {
			return err
		}
		return serr
	}}
	l, lerr := lc.Listen(context.Background(), "tcp4", addr)
	if err := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, and ends with its goroutine: it must
		// not run anything else in the wrong namespace.
		if l != nil {
			l.Close()
		}
		return nil, fmt.Errorf("leaving the node network namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return l, lerr
}

// policyChains names the policy controller's chains in the filter table
// iptables-save (argv) prints ("" none): run on the host it must find
// none, the controller writing only inside the node network namespace.
func policyChains(argv ...string) (string, error) {
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	var found []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, prefix := range []string{":KUBE-ROUTER-", ":KUBE-POD-FW-", ":KUBE-NWPLCY-"} {
			if strings.HasPrefix(line, prefix) {
				found = append(found, strings.Fields(line)[0][1:])
			}
		}
	}
	return strings.Join(found, " "), nil
}
