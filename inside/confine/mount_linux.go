package confine

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Path resolution modes (openat2). Every path Enter touches is resolved
// relative to a directory fd with one of these, never through the caller's
// root, so a symlink cannot send a mount outside the tree it belongs to.
const (
	// resolveHost: a host path, its symlinks followed as the host would
	// (absolute ones relative to the host's root), never magic links.
	resolveHost = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
	// resolveStrict: no symlink at all, and never above the start.
	// Writable binds' sources and every mount target.
	resolveStrict = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS
	// resolveInside: a path as the sandbox will see it, its symlinks
	// resolved inside the new root. Masks and read-only re-binds, so they
	// land on what a process inside would reach.
	resolveInside = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
)

// openPath opens p as an O_PATH fd: absolute within the tree at dirfd, or
// an ordinary absolute path when dirfd is AT_FDCWD.
func openPath(dirfd int, p string, resolve uint64) (int, error) {
	rel := p
	if dirfd != unix.AT_FDCWD {
		// Scoped lookups take paths relative to dirfd.
		if rel = strings.TrimPrefix(p, "/"); rel == "" {
			rel = "."
		}
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve}
	for range 8 {
		fd, err := unix.Openat2(dirfd, rel, &how)
		// EAGAIN: a rename raced the scoped lookup; the kernel asks for a retry.
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		return fd, err
	}
	return -1, unix.EAGAIN
}

// cloneTree makes a detached copy of the mount tree at fd (a bind mount not
// yet attached anywhere); recursive copies the mounts under it too.
func cloneTree(fd int, recursive bool) (int, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	mfd, err := unix.OpenTree(fd, "", flags)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	return mfd, nil
}

// setAttrs adds mount attributes (MOUNT_ATTR_*) to the mount at fd and,
// when recursive, to every mount under it. Nothing is cleared, so flags
// the kernel locked (a read-only or nosuid host mount seen from a user
// namespace) stay as they are.
func setAttrs(fd int, recursive bool, attrs uint64) error {
	flags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	if err := unix.MountSetattr(fd, "", flags, &unix.MountAttr{Attr_set: attrs}); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	return nil
}

// attach mounts the detached mount mfd on the path target refers to.
func attach(mfd, target int) error {
	err := unix.MoveMount(mfd, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// fsOption is one fsconfig key: a string value, or a flag when value is "".
type fsOption struct{ key, value string }

// newFS creates a detached mount of a fresh filesystem (tmpfs, proc,
// sysfs, devpts) with mount attributes attrs.
func newFS(fstype string, opts []fsOption, attrs int) (int, error) {
	fd, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen %s: %w", fstype, err)
	}
	defer unix.Close(fd)
	for _, o := range opts {
		if o.value == "" {
			err = unix.FsconfigSetFlag(fd, o.key)
		} else {
			err = unix.FsconfigSetString(fd, o.key, o.value)
		}
		if err != nil {
			return -1, fmt.Errorf("%s option %s=%q: %w%s", fstype, o.key, o.value, err, fsLog(fd))
		}
	}
	if err := unix.FsconfigCreate(fd); err != nil {
		return -1, fmt.Errorf("creating a %s: %w%s", fstype, err, fsLog(fd))
	}
	mfd, err := unix.Fsmount(fd, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return -1, fmt.Errorf("fsmount %s: %w%s", fstype, err, fsLog(fd))
	}
	return mfd, nil
}

// fsLog returns the kernel's own messages about a failed fsconfig or
// fsmount, read from the filesystem context, as a suffix for the error.
func fsLog(fd int) string {
	var msgs []string
	buf := make([]byte, 512)
	for range 8 {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		msgs = append(msgs, strings.TrimSpace(string(buf[:n])))
	}
	if len(msgs) == 0 {
		return ""
	}
	return " (kernel: " + strings.Join(msgs, "; ") + ")"
}

// statPath returns what fd refers to: its file type bits and its mount id.
func statPath(fd int) (mode uint16, mntID uint64, err error) {
	var st unix.Statx_t
	err = unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_MNT_ID, &st)
	if err != nil {
		return 0, 0, fmt.Errorf("statx: %w", err)
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return 0, 0, errors.New("statx: the kernel gave no mount id")
	}
	return st.Mode & unix.S_IFMT, st.Mnt_id, nil
}

func isDir(mode uint16) bool { return mode == unix.S_IFDIR }
