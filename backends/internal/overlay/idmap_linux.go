//go:build linux

package overlay

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// idmapLower attaches at target (an empty directory of the set) a
// read-only, nosuid, nodev copy of the directory lower in which the files
// of lower's owner (uid:gid from) appear as the sandbox's ids (to): the
// overlay's lower layer when root runs the sandbox as another identity
// than the checkout's owner (a root-owned checkout in a user's workspace),
// so the sandbox may write, in its discarded view, what that owner could.
// Files of any other owner appear as the overflow id and keep only what
// "others" may do. The copy is read-only and sits in the set's root-only
// directory: the host's files are never reachable writable through it.
func idmapLower(lower, target string, from, to [2]int) error {
	ns, err := userns(from, to)
	if err != nil {
		return fmt.Errorf("a user namespace for its id mapping: %w", err)
	}
	defer unix.Close(ns)
	fd, err := unix.OpenTree(unix.AT_FDCWD, lower, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", lower, err)
	}
	defer unix.Close(fd)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(ns)}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("an id-mapped view of %s: %w", lower, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// userns returns an fd of a new user namespace that maps from (uid, gid)
// inside to (uid, gid) outside, one id each. It is the namespace of a
// child stopped by ptrace at its exec (this binary, which never runs a
// line): the mapping is written before the exec, the fd is taken, the
// child killed.
func userns(from, to [2]int) (int, error) {
	// ptrace is per thread: the child's tracer is this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// This binary as the kernel has it, even if its file was replaced.
	cmd := exec.Command("/proc/self/exe")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		Ptrace:      true,
		Pdeathsig:   syscall.SIGKILL,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: from[0], HostID: to[0], Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: from[1], HostID: to[1], Size: 1}},
	}
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	return unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
}
