package confine

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/inside/seccompfilter"
	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
)

// Probe says what this kernel and machine support. It changes nothing: the
// user namespace test starts a short-lived child in a new user namespace
// whose exec fails on purpose.
func Probe() Support {
	s := Support{
		UserNS:   probeUserNS(),
		Seccomp:  probeSeccomp(),
		Landlock: missing("", costLandlock),
	}
	if os.Geteuid() == 0 {
		s.UnprivilegedUserNS = probeUnprivilegedUserNS()
	} else {
		s.UnprivilegedUserNS = s.UserNS
		if !s.UserNS.Available {
			s.UnprivilegedUserNS.Cost = costUnprivUserNS
		}
	}
	if abi, err := llsyscall.LandlockGetABIVersion(); err != nil {
		s.Landlock.Detail = landlockMissing(err)
	} else {
		s.Landlock, s.LandlockABI = present(fmt.Sprintf("ABI %d", abi)), abi
	}
	s.Cgroup, s.CgroupVersion = probeCgroup()
	return s
}

// probeUserNS clones a child into a new user namespace that then execs
// /dev/null: EACCES from the exec means the namespace was made; an error
// from clone itself (EPERM, ENOSPC, EUSERS, EINVAL) means it was not.
func probeUserNS() Layer {
	_, err := syscall.ForkExec("/dev/null", []string{"probe"}, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER},
	})
	switch {
	case errors.Is(err, unix.EACCES):
		return present("created one")
	case err == nil:
		return missing("the probe unexpectedly ran /dev/null", costUserNS)
	}
	reason := fmt.Sprintf("clone(CLONE_NEWUSER): %v", err)
	if why := userNSLimits(); why != "" {
		reason += "; " + why
	}
	return missing(reason, costUserNS)
}

// probeUnprivilegedUserNS reads the knobs that stop non-root users (root
// cannot test it by trying: clone checks the creds it has before any
// switch).
func probeUnprivilegedUserNS() Layer {
	if why := userNSLimits(); why != "" {
		return missing(why, costUnprivUserNS)
	}
	return present("no sysctl or AppArmor knob forbids them")
}

// userNSLimits names the sysctls that forbid user namespaces, if any.
func userNSLimits() string {
	var why []string
	if readTrim("/proc/sys/kernel/unprivileged_userns_clone") == "0" {
		why = append(why, "kernel.unprivileged_userns_clone=0 (Debian's switch)")
	}
	if readTrim("/proc/sys/user/max_user_namespaces") == "0" {
		why = append(why, "user.max_user_namespaces=0")
	}
	if readTrim("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
		why = append(why, "kernel.apparmor_restrict_unprivileged_userns=1 (Ubuntu 23.10+: unprivileged "+
			"namespaces get no capabilities unless an AppArmor profile allows it)")
	}
	return strings.Join(why, "; ")
}

func landlockMissing(err error) string {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return "landlock_create_ruleset: ENOSYS: the kernel is built without Landlock (CONFIG_SECURITY_LANDLOCK)"
	case errors.Is(err, unix.EOPNOTSUPP):
		return "landlock_create_ruleset: EOPNOTSUPP: Landlock is built in but not enabled; add it to the lsm= boot parameter"
	}
	return fmt.Sprintf("landlock_create_ruleset: %v", err)
}

// probeSeccomp asks the kernel whether it knows each action the filter
// returns; that needs CONFIG_SECCOMP_FILTER.
func probeSeccomp() Layer {
	for _, a := range seccompfilter.Actions() {
		ret := a.Ret
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&ret)))
		if errno != 0 {
			return missing(fmt.Sprintf("seccomp action %s: %v", a.Name, errno), costSeccomp)
		}
	}
	mode := statusFields(readTrim("/proc/self/status"))["Seccomp"]
	return present(fmt.Sprintf("filters with kill_process, errno and allow; this process's mode is %s", mode))
}

// probeCgroup finds the cgroup hierarchies and whether this process could
// create a child cgroup with the memory and pids controllers.
func probeCgroup() (Layer, string) {
	mounts := cgroupfs.Mounts(readTrim("/proc/self/mountinfo"))
	v1, v2 := mounts["cgroup"], mounts["cgroup2"]
	version := ""
	switch {
	case len(v1) > 0 && len(v2) > 0:
		version = "hybrid"
	case len(v1) > 0:
		version = "v1"
	case len(v2) > 0:
		version = "v2"
	default:
		return missing("no cgroup filesystem is mounted", costCgroup), ""
	}
	own := cgroupfs.Paths(readTrim("/proc/self/cgroup"))
	if len(v2) > 0 {
		dir := path.Join(v2[0].Point, own[""])
		ctrls := strings.Fields(readTrim(path.Join(dir, "cgroup.controllers")))
		if unix.Access(dir, unix.W_OK) == nil && slices.Contains(ctrls, "memory") && slices.Contains(ctrls, "pids") {
			return present(fmt.Sprintf("%s: writable, memory and pids controllers", dir)), version
		}
	}
	var dirs []string
	for _, ctrl := range []string{"memory", "pids"} {
		for _, m := range v1 {
			if slices.Contains(m.Opts, ctrl) {
				dir := path.Join(m.Point, own[ctrl])
				if unix.Access(dir, unix.W_OK) == nil {
					dirs = append(dirs, dir)
				}
			}
		}
	}
	if len(dirs) == 2 {
		return present(strings.Join(dirs, ", ") + ": writable (v1)"), version
	}
	return missing(fmt.Sprintf("%s hierarchy, but no writable cgroup with the memory and pids controllers "+
		"(needs root or a delegated cgroup, e.g. systemd-run --user --scope)", version), costCgroup), version
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
