//go:build linux

package kubecluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The node's kubelet runs with cgroupsPerQOS: its pods get a pod cgroup,
// the only place the kubelet's podPidsLimit is set (with cgroupsPerQOS
// off the kubelet's pod container manager is a no-op and the limit holds
// nowhere). Its cgroupRoot is a cgroup of the cluster's own, so two test
// clusters on this machine never share a kubepods tree and Stop (or a
// reap after kill -9) removes the whole of it.

// cgroupName is the node's cgroup root below each hierarchy's root, named
// by the cluster's directory (a reap knows only that).
func cgroupName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "triage-kube-" + hex.EncodeToString(sum[:6])
}

const cgroupMount = "/sys/fs/cgroup"

// cgroupDirs are the node's cgroup root in each mounted hierarchy: the
// unified one (cgroup v2), or each v1 controller the kubelet uses.
func cgroupDirs(dir string) []string {
	name := cgroupName(dir)
	if _, err := os.Stat(filepath.Join(cgroupMount, "cgroup.controllers")); err == nil {
		return []string{filepath.Join(cgroupMount, name)}
	}
	var out []string
	for _, sub := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb", "systemd", "unified", "blkio", "devices", "freezer"} {
		root := filepath.Join(cgroupMount, sub)
		if fi, err := os.Lstat(root); err == nil && fi.IsDir() {
			out = append(out, filepath.Join(root, name))
		}
	}
	return out
}

// makeCgroupRoot makes the node's cgroup root (the kubelet refuses a root
// that does not exist), a v1 cpuset with its parent's CPUs and memory
// nodes (an empty one admits no task). It returns the root's path below
// each hierarchy's root, for cgroupRoot.
func makeCgroupRoot(dir string) (string, error) {
	for _, d := range cgroupDirs(dir) {
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			return "", fmt.Errorf("the node's cgroup root: %w", err)
		}
		if filepath.Base(filepath.Dir(d)) != "cpuset" {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(filepath.Dir(d), f))
			if err != nil {
				return "", fmt.Errorf("the node's cpuset: %w", err)
			}
			if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
				return "", fmt.Errorf("the node's cpuset: %w", err)
			}
		}
	}
	return "/" + cgroupName(dir), nil
}

// removeCgroupRoot removes the node's cgroup trees, deepest first, once
// nothing runs in them (Stop and reap kill the containers first). What
// will not go (a task still there) is reported.
func removeCgroupRoot(dir string) error {
	var left []string
	for _, root := range cgroupDirs(dir) {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				left = append(left, d)
			}
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("cgroups left: %s", strings.Join(left, ", "))
	}
	return nil
}
