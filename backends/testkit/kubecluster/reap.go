//go:build linux

package kubecluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/ownership"
)

// A test process killed outright (a -timeout panic, kill -9) never runs
// Stop: its etcd, API server, containerd and kubelet die with it
// (parent-death signal), but the containers' shims and processes, their
// mounts and network namespaces would stay. Each cluster therefore
// registers its directory under registryDir, named by its owner's pid and
// start time; the next cluster started on this machine reaps those whose
// owner is gone.

// registryDir holds one entry per live cluster: a file named
// PID-START-DIGEST (a process may run several) holding the cluster's
// directory.
func registryDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("triage-sandbox-kube-clusters-%d", os.Geteuid()))
}

// register records c's directory for a later reap, and reaps what dead
// owners left.
func (c *Cluster) register() error {
	reg := registryDir()
	if err := os.MkdirAll(reg, 0o700); err != nil {
		return err
	}
	reapDead(reg)
	pid := os.Getpid()
	sum := sha256.Sum256([]byte(c.Dir))
	c.entry = filepath.Join(reg, fmt.Sprintf("%d-%s-%s", pid, ownership.ProcessStart(pid), hex.EncodeToString(sum[:6])))
	return os.WriteFile(c.entry, []byte(c.Dir), 0o600)
}

// reapDead stops what each dead owner's cluster left and removes its
// directory.
func reapDead(reg string) {
	entries, _ := os.ReadDir(reg)
	for _, e := range entries {
		f := strings.SplitN(e.Name(), "-", 3)
		if len(f) != 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || ownership.ProcessStart(pid) == f[1] && f[1] != "" {
			continue // alive (the same process, not a reused pid)
		}
		path := filepath.Join(reg, e.Name())
		dir, err := os.ReadFile(path)
		if err == nil && filepath.IsAbs(string(dir)) && len(dir) > 1 {
			reap(string(dir))
		}
		_ = os.Remove(path)
	}
}

// reap kills and deletes every container the node's runc and runsc know
// under dir, kills what else names dir on its command line (the shims,
// gVisor's sandbox and gofer processes), unmounts what is mounted below it
// and removes it.
func reap(dir string) {
	for _, rt := range []struct{ bin, root string }{{runcPath(), "runc-root"}, {filepath.Join(GVisorDir(), runscBinary), "runsc-root"}} {
		root := filepath.Join(dir, "node", rt.root, "k8s.io")
		if _, err := os.Stat(root); err != nil {
			continue
		}
		if out, err := exec.Command(rt.bin, "--root", root, "list", "--quiet").Output(); err == nil {
			for _, id := range strings.Fields(string(out)) {
				_ = exec.Command(rt.bin, "--root", root, "delete", "-f", id).Run()
			}
		}
	}
	killNaming(dir)
	unmountUnder(dir)
	_ = removeCgroupRoot(dir)
	_ = os.RemoveAll(dir)
}

// killNaming kills every process whose command line names dir.
func killNaming(dir string) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir+"/") {
			continue
		}
		if proc, err := os.FindProcess(pid); err == nil {
			_ = proc.Kill()
		}
	}
}
