package local

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

const cgroupRoot = "/sys/fs/cgroup"

// v1Controllers are the cgroup v1 hierarchies a sandbox gets a group in.
var v1Controllers = []string{"memory", "pids", "cpu"}

// cgroupsUsable says whether this process can make a limited cgroup: a
// unified (v2) hierarchy with the controllers delegated to the root, or
// writable v1 hierarchies for memory, pids and cpu.
func cgroupsUsable() error {
	if unified() {
		raw, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"))
		if err != nil {
			return fmt.Errorf("cgroup v2: %w", err)
		}
		for _, c := range []string{"memory", "pids", "cpu"} {
			if !strings.Contains(" "+string(raw)+" ", " "+c+" ") {
				return fmt.Errorf("cgroup v2: the %s controller is not enabled in %s/cgroup.subtree_control", c, cgroupRoot)
			}
		}
		return writable(cgroupRoot)
	}
	for _, c := range v1Controllers {
		if err := writable(filepath.Join(cgroupRoot, c)); err != nil {
			return fmt.Errorf("cgroup v1 %s: %w", c, err)
		}
	}
	return nil
}

func unified() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}

func writable(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return unixAccessW(dir)
}

// cgroup is one sandbox's group in each hierarchy.
type cgroup struct{ dirs []string }

// newCgroup makes the sandbox's groups and sets the policy's limits.
func newCgroup(id string, l profiles.Limits) (*cgroup, error) {
	cg := &cgroup{}
	var files map[string]map[string]string
	if unified() {
		cg.dirs = []string{filepath.Join(cgroupRoot, id)}
		quota := int64(math.Round(l.CPUs * 100000))
		files = map[string]map[string]string{cg.dirs[0]: {
			"memory.max": strconv.FormatInt(l.Memory, 10), "memory.swap.max": "0",
			"pids.max": strconv.FormatInt(l.Pids, 10), "cpu.max": fmt.Sprintf("%d 100000", quota),
		}}
	} else {
		files = map[string]map[string]string{}
		for _, c := range v1Controllers {
			dir := filepath.Join(cgroupRoot, c, id)
			cg.dirs = append(cg.dirs, dir)
			switch c {
			case "memory":
				files[dir] = map[string]string{"memory.limit_in_bytes": strconv.FormatInt(l.Memory, 10)}
				if _, err := os.Stat(filepath.Join(cgroupRoot, c, "memory.memsw.limit_in_bytes")); err == nil {
					files[dir]["memory.memsw.limit_in_bytes"] = strconv.FormatInt(l.Memory, 10)
				}
			case "pids":
				files[dir] = map[string]string{"pids.max": strconv.FormatInt(l.Pids, 10)}
			case "cpu":
				files[dir] = map[string]string{"cpu.cfs_period_us": "100000",
					"cpu.cfs_quota_us": strconv.FormatInt(int64(math.Round(l.CPUs*100000)), 10)}
			}
		}
	}
	for _, dir := range cg.dirs {
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = cg.remove()
			return nil, fmt.Errorf("making the sandbox's cgroup: %w", err)
		}
		// memory.limit before memsw: the kernel refuses memsw below it.
		for _, name := range orderedKeys(files[dir]) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(files[dir][name]), 0o644); err != nil {
				_ = cg.remove()
				return nil, fmt.Errorf("setting %s of the sandbox's cgroup: %w", name, err)
			}
		}
	}
	return cg, nil
}

func orderedKeys(m map[string]string) []string {
	var out []string
	for _, k := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.max", "memory.swap.max",
		"pids.max", "cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.max"} {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// add moves pid into every group.
func (cg *cgroup) add(pid int) error {
	for _, dir := range cg.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving the sandbox into its cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// remove deletes the groups once nothing is left in them.
func (cg *cgroup) remove() error {
	return removeCgroups(cg.dirs)
}

// removeCgroups kills what is left in dirs and removes them.
func removeCgroups(dirs []string) error {
	var errs []error
	for _, dir := range dirs {
		if !strings.HasPrefix(dir, cgroupRoot+"/") || !strings.Contains(filepath.Base(dir), "triage-sandbox-local-") {
			errs = append(errs, fmt.Errorf("refusing to remove %s: not a local sandbox's cgroup", dir))
			continue
		}
		var err error
		// A group just emptied may refuse removal for a moment (EBUSY):
		// retry soon, then less often, for about a second in all.
		wait := time.Millisecond
		for deadline := time.Now().Add(time.Second); ; {
			killAllIn(dir)
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(wait)
			wait = min(2*wait, 20*time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing the cgroup %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// killAllIn sends SIGKILL to every process left in a group.
func killAllIn(dir string) {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644); err == nil {
		return
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(raw)) {
		// Never this process: the thread that started the helper was in
		// the group for a moment (see startInside).
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			_ = killPID(pid)
		}
	}
}

// errStranded: the forking thread could not return to its own groups; it
// must end with its goroutine (never be unlocked for other work).
var errStranded = errors.New("the thread that started the helper could not leave the sandbox's cgroups")

// startInside runs start on the calling thread, which the caller has locked,
// while that thread alone is in the sandbox's v1 groups, so that the process
// start forks is born in them: moving a whole process between v1 groups
// waits for an RCU grace period (7-15 ms measured here, and every thread
// of the helper stalls on it), moving one's own thread does not, and the
// helper is never outside its limits. The thread then returns to its
// groups, checked against /proc before it goes on.
//
// handled is false when it left start to the caller (a unified hierarchy,
// or this thread's groups are not where it can find them, or it could not
// join the sandbox's): the caller starts the helper and adds it after.
// Otherwise err is start's, or wraps errStranded when the thread is still
// in a sandbox group.
func (cg *cgroup) startInside(start func() error) (handled bool, err error) {
	if unified() || len(cg.dirs) != len(v1Controllers) {
		return false, nil
	}
	before, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return false, nil
	}
	// The way back is this thread's group as mounted here: only where
	// each hierarchy is mounted from its root (as seen from this cgroup
	// namespace) do /proc's paths name directories under the mount.
	mounts, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return false, nil
	}
	var back []string
	for _, c := range v1Controllers {
		dir, ok := v1Group(string(before), c)
		if !ok || !mountedFromRoot(string(mounts), filepath.Join(cgroupRoot, c)) {
			return false, nil
		}
		back = append(back, dir)
	}
	leave := func() error {
		var errs []error
		for _, dir := range back {
			if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte("0"), 0o644); err != nil {
				errs = append(errs, err)
			}
		}
		after, err := os.ReadFile("/proc/thread-self/cgroup")
		if err == nil && string(after) != string(before) {
			err = fmt.Errorf("its groups are %q, were %q", after, before)
		}
		if err := errors.Join(append(errs, err)...); err != nil {
			return fmt.Errorf("%w: %w", errStranded, err)
		}
		return nil
	}
	for _, dir := range cg.dirs {
		// "0" is the writing thread itself, in tasks that thread alone.
		if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte("0"), 0o644); err != nil {
			if lerr := leave(); lerr != nil {
				return true, lerr
			}
			return false, nil
		}
	}
	err = start()
	if lerr := leave(); lerr != nil {
		return true, errors.Join(err, lerr)
	}
	return true, err
}

// mountedFromRoot: a /proc/PID/mountinfo text has a cgroup mount on dir
// (or where its symlink leads) whose root is the hierarchy's.
func mountedFromRoot(mountinfo, dir string) bool {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	found := false
	for line := range strings.SplitSeq(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != dir {
			continue
		}
		// The last mount on dir is the one seen there.
		_, fs, _ := strings.Cut(line, " - ")
		found = f[3] == "/" && strings.HasPrefix(fs, "cgroup ")
	}
	return found
}

// v1Group finds controller c's group in a /proc/PID/cgroup text (lines of
// hierarchy:controllers:path) and returns its directory.
func v1Group(procCgroup, c string) (string, bool) {
	for line := range strings.SplitSeq(procCgroup, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !slices.Contains(strings.Split(f[1], ","), c) {
			continue
		}
		if !strings.HasPrefix(f[2], "/") || strings.Contains(f[2], "/../") || strings.HasSuffix(f[2], "/..") {
			return "", false
		}
		return filepath.Join(cgroupRoot, c, f[2]), true
	}
	return "", false
}
