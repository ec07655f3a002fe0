package confine

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// overlay mounts b.Source (src, an O_PATH fd of the host directory) at
// b.Dest() writable, with writes that go nowhere: an overlay whose lower
// layer is the host directory and whose upper layer is a tmpfs of its own,
// bounded by b.Discard, nosuid and nodev like every tmpfs Enter makes.
// The kernel never writes a lower layer, so the host's directory stays as
// it was; what the sandbox writes is copied up into the tmpfs and goes
// with the sandbox's mount namespace.
//
// The helper may mount an overlay in its user namespace without root on
// the host (overlayfs is mountable there from Linux 5.11), with the
// user.* extended attributes (userxattr), which tmpfs keeps from 6.6.
// Everything is built on the owner's thread: the overlay keeps its
// mounter's credentials for copy-up, and a root-started helper's own uid
// is one the namespace does not map (see fsid_linux.go).
func (t *tree) overlay(b Bind, src int) error {
	var st unix.Statx_t
	if err := unix.Statx(src, "", unix.AT_EMPTY_PATH, unix.STATX_MODE, &st); err != nil {
		return fmt.Errorf("discard %s: statx: %w", b.Source, err)
	}
	var mfd int
	err := t.asOwner(func() error {
		var err error
		mfd, err = t.overlayMount(src, uint32(st.Mode&0o7777), *b.Discard)
		return err
	})
	if err != nil {
		return fmt.Errorf("discard %s: %w", b.Source, err)
	}
	defer unix.Close(mfd)
	if err := t.mountOn(mfd, b.Dest(), true); err != nil {
		return fmt.Errorf("discard %s: %w", b.Source, err)
	}
	return nil
}

// overlayMount makes the detached overlay of the directory lower with a
// fresh upper layer bounded by l whose root has mode (the host
// directory's) and the sandbox's ids, so the sandbox writes at its top as
// the checkout's owner would. It runs on the owner's thread.
func (t *tree) overlayMount(lower int, mode uint32, l UpperLayer) (int, error) {
	tfd, err := newFS("tmpfs", append([]fsOption{
		{"size", strconv.FormatInt(l.Size, 10)}, {"nr_inodes", strconv.FormatInt(l.Inodes, 10)}, {"mode", "700"},
	}, t.ownerOptions()...), attrsSafe)
	if err != nil {
		return -1, fmt.Errorf("its upper layer: %w", err)
	}
	defer unix.Close(tfd)
	dirs := map[string]int{}
	for _, d := range []string{"upper", "work"} {
		if err := unix.Mkdirat(tfd, d, 0o700); err != nil {
			return -1, fmt.Errorf("its upper layer: mkdir %s: %w", d, err)
		}
		fd, err := openPath(tfd, d, resolveStrict)
		if err != nil {
			return -1, fmt.Errorf("its upper layer: %s: %w", d, err)
		}
		defer unix.Close(fd)
		dirs[d] = fd
	}
	// Set explicitly: mkdir's mode is filtered by the umask.
	if err := unix.Fchmodat(tfd, "upper", mode, 0); err != nil {
		return -1, fmt.Errorf("its upper layer: chmod: %w", err)
	}
	mfd, err := overlayFS(lower, dirs["upper"], dirs["work"])
	if err != nil {
		return -1, err
	}
	return mfd, nil
}

// overlayFS creates the detached overlay of the layers at the O_PATH fds
// lower, upper and work: by fd where the kernel takes layers so (6.13 and
// later), else by their /proc/self/fd paths.
func overlayFS(lower, upper, work int) (int, error) {
	mfd, err := overlayBy(func(fd int, key string, layer int) error { return unix.FsconfigSetFd(fd, key, layer) },
		[]string{"lowerdir+", "upperdir", "workdir"}, lower, upper, work)
	if err == nil || !errors.Is(err, unix.EINVAL) {
		return mfd, err
	}
	return overlayBy(func(fd int, key string, layer int) error {
		return unix.FsconfigSetString(fd, key, "/proc/self/fd/"+strconv.Itoa(layer))
	}, []string{"lowerdir", "upperdir", "workdir"}, lower, upper, work)
}

func overlayBy(set func(fd int, key string, layer int) error, keys []string, layers ...int) (int, error) {
	fd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen overlay: %w", err)
	}
	defer unix.Close(fd)
	for i, key := range keys {
		if err := set(fd, key, layers[i]); err != nil {
			return -1, fmt.Errorf("overlay option %s: %w%s", key, err, fsLog(fd))
		}
	}
	if err := unix.FsconfigSetFlag(fd, "userxattr"); err != nil {
		return -1, fmt.Errorf("overlay option userxattr: %w%s", err, fsLog(fd))
	}
	if err := unix.FsconfigCreate(fd); err != nil {
		return -1, fmt.Errorf("creating an overlay: %w%s", err, fsLog(fd))
	}
	mfd, err := unix.Fsmount(fd, unix.FSMOUNT_CLOEXEC, attrsSafe)
	if err != nil {
		return -1, fmt.Errorf("fsmount overlay: %w%s", err, fsLog(fd))
	}
	return mfd, nil
}
