package confine

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// tree is the new root while Enter builds it.
type tree struct {
	root int // O_PATH fd of the new root's top directory
	host int // O_PATH fd of the host's root
	// own holds the ids of the mounts Enter created (the new root, each
	// tmpfs, /dev). Mount points are created only on these, so building
	// the tree never creates a file or directory on the host.
	own map[uint64]bool
	// empty is an O_PATH fd of an empty read-only file, bound over masked
	// files.
	empty int
	// uid and gid are the sandbox's ids, which own every file Enter
	// creates and the tmpfs mounts it creates them on.
	uid, gid int
	// owner is the thread Enter creates files on (nil until the first).
	owner *fsOwner
}

// asOwner runs fn with the sandbox's ids as its filesystem ids.
func (t *tree) asOwner(fn func() error) error {
	if t.owner == nil {
		o, err := newFSOwner(t.uid, t.gid)
		if err != nil {
			return err
		}
		t.owner = o
	}
	return t.owner.run(fn)
}

// ownerOptions are the tmpfs options that give its root to the sandbox's
// ids, so that Enter may create in it.
func (t *tree) ownerOptions() []fsOption {
	return []fsOption{{"uid", strconv.Itoa(t.uid)}, {"gid", strconv.Itoa(t.gid)}}
}

func (t *tree) close() {
	if t.owner != nil {
		t.owner.stop()
		t.owner = nil
	}
	for _, fd := range []int{t.root, t.host, t.empty} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// claim records the detached mount mfd as one of Enter's own.
func (t *tree) claim(mfd int) error {
	_, id, err := statPath(mfd)
	if err != nil {
		return err
	}
	t.own[id] = true
	return nil
}

// ensure returns an O_PATH fd of p (inside), creating it and its missing
// parents when they would be on one of Enter's own mounts. dir says whether
// p must be a directory or must not be one. Created directories get mode
// (parents 0755), files mode 0444: they only serve as mount points.
func (t *tree) ensure(p string, dir bool, mode uint32) (int, error) {
	cur, err := unix.Dup(t.root)
	if err != nil {
		return -1, fmt.Errorf("dup: %w", err)
	}
	comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, c := range comps {
		last := i == len(comps)-1
		next, err := openPath(cur, c, resolveStrict)
		if err == unix.ENOENT {
			err = t.create(cur, c, !last || dir, mode, last)
			if err == nil {
				next, err = openPath(cur, c, resolveStrict)
			}
		}
		unix.Close(cur)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", path.Join("/", path.Join(comps[:i+1]...)), explainLookup(err))
		}
		cur = next
	}
	mode16, _, err := statPath(cur)
	if err == nil && isDir(mode16) != dir {
		err = fmt.Errorf("exists as %s, and what is mounted there is %s", kindName(isDir(mode16)), kindName(dir))
	}
	if err != nil {
		unix.Close(cur)
		return -1, fmt.Errorf("%s: %w", p, err)
	}
	return cur, nil
}

// create makes name in the directory parent, which must be on one of
// Enter's own mounts.
func (t *tree) create(parent int, name string, dir bool, mode uint32, last bool) error {
	_, id, err := statPath(parent)
	if err != nil {
		return err
	}
	if !t.own[id] {
		return errors.New("does not exist, and its directory is the host's (a bind), where Enter creates nothing; " +
			"create it on the host or mount a tmpfs above it")
	}
	if !last {
		mode = 0o755
	}
	return t.asOwner(func() error { return makeNode(parent, name, dir, mode) })
}

// makeNode creates name in parent: a directory of mode, or an empty file of
// mode 0444.
func makeNode(parent int, name string, dir bool, mode uint32) error {
	if dir {
		if err := unix.Mkdirat(parent, name, 0o700); err != nil && err != unix.EEXIST {
			return fmt.Errorf("mkdir: %w", err)
		}
	} else {
		fd, err := unix.Openat(parent, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("creating a mount point: %w", err)
		}
		unix.Close(fd)
		mode = 0o444
	}
	// Set the mode explicitly: mkdir's is filtered by the umask.
	if err := unix.Fchmodat(parent, name, mode, 0); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	return nil
}

// mountOn attaches the detached mount mfd at p (inside), creating the mount
// point if it may.
func (t *tree) mountOn(mfd int, p string, dir bool) error {
	target, err := t.ensure(p, dir, 0o755)
	if err != nil {
		return err
	}
	defer unix.Close(target)
	if err := attach(mfd, target); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// explainLookup names the usual reasons a scoped lookup fails.
func explainLookup(err error) error {
	switch err {
	case unix.ELOOP:
		return fmt.Errorf("a symlink is on the way (%w): mount targets must be real directories", err)
	case unix.EXDEV:
		return fmt.Errorf("the path leaves the tree (%w)", err)
	}
	return err
}

func kindName(dir bool) string {
	if dir {
		return "a directory"
	}
	return "not a directory"
}
