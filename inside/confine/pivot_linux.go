package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Where the first pivot puts things: the scratch tmpfs is mounted over the
// host's /tmp (in this mount namespace only) and becomes the root, with the
// host's root under oldRoot and the new root built under newRoot. This is
// bubblewrap's layout: every host path stays reachable, under one fd, while
// the new root is built, and nothing of it is left once the second pivot
// detaches the scratch root.
const (
	scratchMount = "/tmp"
	oldRoot      = "/oldroot"
	newRoot      = "/newroot"
	emptyFile    = "/empty"
)

// makePrivate stops mount events propagating between this namespace and the
// host's, in both directions, before anything is mounted.
func makePrivate() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making every mount private: %w", err)
	}
	return nil
}

// pivotToScratch mounts the scratch tmpfs, pivots into it and returns the
// tree to build in: the new root's tmpfs at newRoot, the host's root, and
// the empty file masks are bound from. uid and gid (the sandbox's) own
// what Enter creates.
func pivotToScratch(uid, gid int) (_ *tree, err error) {
	t := &tree{root: -1, host: -1, empty: -1, own: map[uint64]bool{}, uid: uid, gid: gid}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	scratch, err := newFS("tmpfs", append(t.ownerOptions(), fsOption{"size", "65536"}, fsOption{"nr_inodes", "16"},
		fsOption{"mode", "700"}), attrsSafe|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("scratch root: %w", err)
	}
	defer unix.Close(scratch)
	at, err := openPath(unix.AT_FDCWD, scratchMount, resolveStrict&^unix.RESOLVE_BENEATH)
	if err != nil {
		return nil, fmt.Errorf("scratch root: opening %s: %w", scratchMount, err)
	}
	err = attach(scratch, at)
	unix.Close(at)
	if err != nil {
		return nil, fmt.Errorf("scratch root on %s: %w", scratchMount, err)
	}
	if err := unix.Fchdir(scratch); err != nil {
		return nil, fmt.Errorf("scratch root: chdir: %w", err)
	}
	for _, d := range []string{oldRoot, newRoot} {
		if err := t.asOwner(func() error { return unix.Mkdirat(scratch, "."+d, 0o700) }); err != nil {
			return nil, fmt.Errorf("scratch root: mkdir %s: %w", d, err)
		}
	}
	if err := unix.PivotRoot(".", "."+oldRoot); err != nil {
		return nil, fmt.Errorf("pivot_root into the scratch root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return nil, fmt.Errorf("chdir /: %w", err)
	}
	if t.empty, err = t.makeEmptyFile(); err != nil {
		return nil, err
	}
	if t.host, err = openPath(unix.AT_FDCWD, oldRoot, resolveStrict&^unix.RESOLVE_BENEATH); err != nil {
		return nil, fmt.Errorf("opening the host's root: %w", err)
	}
	if err := t.mountNewRoot(); err != nil {
		return nil, err
	}
	return t, nil
}

// makeEmptyFile creates the empty, read-only file masks are bound from.
func (t *tree) makeEmptyFile() (int, error) {
	err := t.asOwner(func() error {
		fd, err := unix.Open(emptyFile, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Fchmod(fd, 0o444)
			unix.Close(fd)
		}
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("creating the empty mask file: %w", err)
	}
	pfd, err := openPath(unix.AT_FDCWD, emptyFile, resolveStrict&^unix.RESOLVE_BENEATH)
	if err != nil {
		return -1, fmt.Errorf("opening the empty mask file: %w", err)
	}
	return pfd, nil
}

// mountNewRoot mounts the tmpfs that becomes the sandbox's root. It holds
// only mount points and symlinks, and becomes read-only at the end.
func (t *tree) mountNewRoot() error {
	mfd, err := newFS("tmpfs", append(t.ownerOptions(), fsOption{"size", "1048576"}, fsOption{"nr_inodes", "16384"},
		fsOption{"mode", "755"}), attrsSafe)
	if err != nil {
		return fmt.Errorf("new root: %w", err)
	}
	if err := t.claim(mfd); err != nil {
		unix.Close(mfd)
		return fmt.Errorf("new root: %w", err)
	}
	at, err := openPath(unix.AT_FDCWD, newRoot, resolveStrict&^unix.RESOLVE_BENEATH)
	if err == nil {
		err = attach(mfd, at)
		unix.Close(at)
	}
	if err != nil {
		unix.Close(mfd)
		return fmt.Errorf("new root: %w", err)
	}
	// The fsmount fd stays the root of the attached mount.
	t.root = mfd
	return nil
}

// pivotToNewRoot makes the new root the root and detaches everything else:
// the scratch root and, under it, the host's whole tree. Then the new
// root's own tmpfs (not the mounts on it) becomes read-only.
func (t *tree) pivotToNewRoot() error {
	if err := unix.Fchdir(t.root); err != nil {
		return fmt.Errorf("chdir into the new root: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on the new one; unmounting
	// "." then takes off the old root (pivot_root(2), NOTES).
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into the new root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making the new root read-only: mount_setattr: %w", err)
	}
	return nil
}
