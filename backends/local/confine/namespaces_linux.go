package confine

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Cloneflags are the namespaces the helper starts in: its own user, mount,
// pid, network, IPC, UTS and cgroup namespaces (the last hides the host's
// cgroup paths from /proc/self/cgroup).
const Cloneflags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// helperCaps are what an unprivileged caller's helper keeps across its
// exec, as ambient capabilities in its own user namespace: mounts and
// pivot_root, raising lo, dropping the bounding set and securebits, and
// raising rlimits. Restrict drops them all.
func helperCaps() []uintptr {
	return []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_RESOURCE,
		unix.CAP_SETUID, unix.CAP_SETGID}
}

// Namespaces returns the SysProcAttr that starts the helper in new
// namespaces. uid and gid are the plan's identity inside; hostUID and
// hostGID are the caller's effective ids (os.Geteuid, os.Getegid).
//
// As root, inside 0 maps to host 0 (the helper is root in its namespace,
// with every capability there, until Restrict) and uid/gid map to the same
// host ids, so a sandbox running as nobody (65534) reads host files as
// nobody does. Otherwise only the caller's own ids can be mapped, uid and
// gid must be those, setgroups is denied (the kernel requires it; the
// caller's supplementary groups stay), and the helper keeps the
// capabilities it needs across exec as ambient ones.
//
// Pdeathsig kills the helper when the thread that started it exits: the
// caller should start it from a goroutine locked to its OS thread that
// stays alive as long as the sandbox.
func Namespaces(uid, gid, hostUID, hostGID int) (*syscall.SysProcAttr, error) {
	if !validID(uid) || !validID(gid) {
		return nil, fmt.Errorf("confine: namespaces: uid %d or gid %d out of range", uid, gid)
	}
	attr := &syscall.SysProcAttr{
		Cloneflags: Cloneflags,
		Setsid:     true,
		Pdeathsig:  syscall.SIGKILL,
	}
	if hostUID == 0 {
		attr.UidMappings = idMappings(0, uid)
		attr.GidMappings = idMappings(0, gid)
		attr.GidMappingsEnableSetgroups = true
		return attr, nil
	}
	if uid != hostUID || gid != hostGID {
		return nil, fmt.Errorf("confine: namespaces: not root, so the sandbox can only run as the caller "+
			"(uid %d, gid %d), not as %d:%d", hostUID, hostGID, uid, gid)
	}
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: hostUID, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: hostGID, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = helperCaps()
	return attr, nil
}

// idMappings maps root and id to the same host ids.
func idMappings(root, id int) []syscall.SysProcIDMap {
	m := []syscall.SysProcIDMap{{ContainerID: root, HostID: root, Size: 1}}
	if id != root {
		m = append(m, syscall.SysProcIDMap{ContainerID: id, HostID: id, Size: 1})
	}
	return m
}
