// Package cgroupfs finds cgroup hierarchies and a process's cgroup
// directories in them, from /proc alone.
package cgroupfs

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Mount is one mounted cgroup (v1) or cgroup2 filesystem.
type Mount struct {
	Point string
	// Root is the mount's root within the hierarchy (mountinfo field 4):
	// not "/" when the hierarchy was mounted from inside a cgroup namespace.
	Root string
	Opts []string
}

// Mounts lists cgroup and cgroup2 mounts from mountinfo text, by type.
func Mounts(mountinfo string) map[string][]Mount {
	m := map[string][]Mount{}
	for line := range strings.SplitSeq(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		m[g[0]] = append(m[g[0]], Mount{Point: f[4], Root: f[3], Opts: strings.Split(g[2], ",")})
	}
	return m
}

// Paths maps each controller of a /proc/PID/cgroup text (v2: "") to the
// process's cgroup path.
func Paths(procCgroup string) map[string]string {
	m := map[string]string{}
	for line := range strings.SplitSeq(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			m[""] = parts[2]
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m
}

// Dir is a process's cgroup directory for one controller.
type Dir struct {
	Path string
	// V2: the controller is in the unified hierarchy.
	V2 bool
}

// ControllerDir finds pid's cgroup directory for controller: in a v1
// hierarchy that has it, else in the unified hierarchy when that enables
// it.
func ControllerDir(pid int, controller string) (Dir, error) {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Dir{}, err
	}
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return Dir{}, err
	}
	return controllerDir(Mounts(string(info)), Paths(string(cg)), controller, func(p string) string {
		b, _ := os.ReadFile(p)
		return string(b)
	})
}

func controllerDir(mounts map[string][]Mount, paths map[string]string, controller string, read func(string) string) (Dir, error) {
	if p, ok := paths[controller]; ok {
		for _, m := range mounts["cgroup"] {
			if slices.Contains(m.Opts, controller) {
				return Dir{Path: join(m, p)}, nil
			}
		}
	}
	if p, ok := paths[""]; ok {
		for _, m := range mounts["cgroup2"] {
			dir := join(m, p)
			if slices.Contains(strings.Fields(read(path.Join(dir, "cgroup.controllers"))), controller) {
				return Dir{Path: dir, V2: true}, nil
			}
		}
	}
	return Dir{}, fmt.Errorf("no mounted cgroup hierarchy has the %s controller for this process", controller)
}

// join places a cgroup path (as /proc shows it) under a mount whose root
// may itself be a cgroup below the hierarchy's top.
func join(m Mount, p string) string {
	if m.Root != "/" && m.Root != "" {
		if rel, ok := strings.CutPrefix(p, m.Root); ok {
			p = rel
		}
	}
	return path.Join(m.Point, p)
}

// Own is the calling thread's cgroup directory in one mounted hierarchy
// (V2: the unified one): the first v1 hierarchy (in mountinfo's order)
// the thread is listed in, else the unified one when it is mounted. A v1
// hierarchy first, because there a thread's membership is its own (a
// thread can be moved alone, by its id in the tasks file); in the unified
// hierarchy every thread of a process is where the process is.
func Own() (Dir, bool) {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Dir{}, false
	}
	cg, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return Dir{}, false
	}
	return own(Mounts(string(info)), Paths(string(cg)))
}

func own(mounts map[string][]Mount, paths map[string]string) (Dir, bool) {
	for _, m := range mounts["cgroup"] {
		for _, opt := range m.Opts {
			// A v1 hierarchy's options name its controllers (or
			// name=NAME), beside mount options no path is listed under.
			if p, ok := paths[opt]; ok {
				return Dir{Path: join(m, p)}, true
			}
		}
	}
	if p, ok := paths[""]; ok && len(mounts["cgroup2"]) > 0 {
		return Dir{Path: join(mounts["cgroup2"][0], p), V2: true}, true
	}
	return Dir{}, false
}
