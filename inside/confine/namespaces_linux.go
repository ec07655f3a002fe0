package confine

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/protocol/localplan"
)

// Cloneflags are the namespaces the helper starts in: its own user, mount,
// pid, network, IPC, UTS and cgroup namespaces (the last hides the host's
// cgroup paths from /proc/self/cgroup).
const Cloneflags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// helperCaps are what the helper keeps across its exec, as ambient
// capabilities in its own user namespace: mounts and pivot_root, raising
// lo, dropping the bounding set and securebits, raising rlimits, and
// switching ids. Restrict drops them all. Root's helper also looks paths up
// in what it created as the sandbox's ids, which it does not own
// (CAP_DAC_READ_SEARCH; in the namespace it covers only files whose owner
// the namespace maps, so none of the host's but the sandbox's own).
// CAP_DAC_OVERRIDE is what the kernel asks of an overlay's mounter (a
// discarded checkout's, see overlay_linux.go); in the namespace it too
// covers only the sandbox's own files, which their owner may chmod anyway.
func helperCaps(root bool) []uintptr {
	caps := []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_RESOURCE,
		unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_DAC_OVERRIDE}
	if root {
		caps = append(caps, unix.CAP_DAC_READ_SEARCH)
	}
	return caps
}

// Namespaces returns the SysProcAttr that starts the helper in new
// namespaces. uid and gid are the plan's identity inside; hostUID and
// hostGID are the caller's effective ids (os.Geteuid, os.Getegid).
//
// The user namespace maps the sandbox's uid and gid alone, each to the
// same host id, so a sandbox running as nobody (65534) reads host files as
// nobody does, and no other host id (root's above all) exists inside. As
// root, uid and gid may be any ids, and setgroups stays allowed so Restrict
// can empty the supplementary groups; the helper stays host uid 0, unmapped,
// which its host lookups need (root-only directories on the way to a bind's
// source) and which makes it create its files with the sandbox's ids (see
// asOwner). Otherwise only the caller's own ids can be mapped, uid and gid
// must be those, and setgroups is denied (the kernel requires it; the
// caller's supplementary groups stay). Either way the helper is not root
// in its namespace, so it keeps the capabilities it needs across exec as
// ambient ones.
//
// Pdeathsig kills the helper when the thread that started it exits: the
// caller should start it from a goroutine locked to its OS thread that
// stays alive as long as the sandbox.
func Namespaces(uid, gid, hostUID, hostGID int) (*syscall.SysProcAttr, error) {
	if !localplan.ValidID(uid) || !localplan.ValidID(gid) {
		return nil, fmt.Errorf("confine: namespaces: uid %d or gid %d out of range", uid, gid)
	}
	root := hostUID == 0
	if !root && (uid != hostUID || gid != hostGID) {
		return nil, fmt.Errorf("confine: namespaces: not root, so the sandbox can only run as the caller "+
			"(uid %d, gid %d), not as %d:%d", hostUID, hostGID, uid, gid)
	}
	return &syscall.SysProcAttr{
		Cloneflags:                 Cloneflags,
		Setsid:                     true,
		Pdeathsig:                  syscall.SIGKILL,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: root,
		AmbientCaps:                helperCaps(root),
	}, nil
}
