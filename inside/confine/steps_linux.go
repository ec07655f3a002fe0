package confine

import (
	"fmt"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// Attributes of the mounts Enter makes. Nothing is ever setuid or a device
// node except the devices Enter binds into /dev itself.
const (
	attrsSafe = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	attrsRO   = attrsSafe | unix.MOUNT_ATTR_RDONLY
	attrsMask = attrsRO | unix.MOUNT_ATTR_NOEXEC
)

func (t *tree) apply(p Plan, s step) error {
	switch s.kind {
	case stepBind:
		return t.bind(p.Binds[s.index])
	case stepTmpfs:
		return t.tmpfs(p.Tmpfs[s.index])
	case stepDir:
		d := p.Dirs[s.index]
		fd, err := t.ensure(d.Path, true, uint32(d.Mode))
		if err != nil {
			return fmt.Errorf("dir %w", err)
		}
		unix.Close(fd)
		return nil
	case stepSymlink:
		return t.symlink(p.Symlinks[s.index])
	}
	return fmt.Errorf("unknown step kind %d", s.kind)
}

// bind mounts a copy of the host's mount tree at b.Source on b.Dest().
func (t *tree) bind(b Bind) error {
	resolve := uint64(resolveHost)
	if b.Write {
		resolve = resolveStrict
	}
	src, err := openPath(t.host, b.Source, resolve)
	if err != nil {
		return fmt.Errorf("bind %s: opening the host path: %w", b.Source, explainLookup(err))
	}
	defer unix.Close(src)
	mode, _, err := statPath(src)
	if err != nil {
		return fmt.Errorf("bind %s: %w", b.Source, err)
	}
	if b.Discard != nil {
		if !isDir(mode) {
			return fmt.Errorf("bind %s: a discarded bind must be a directory", b.Source)
		}
		return t.overlay(b, src)
	}
	// Recursive for files too: something may be mounted on the file itself.
	mfd, err := cloneTree(src, true)
	if err != nil {
		return fmt.Errorf("bind %s: %w", b.Source, err)
	}
	defer unix.Close(mfd)
	attrs := uint64(attrsRO)
	if b.Write {
		attrs = attrsSafe
	}
	if err := setAttrs(mfd, true, attrs); err != nil {
		return fmt.Errorf("bind %s: %w", b.Source, err)
	}
	if err := t.mountOn(mfd, b.Dest(), isDir(mode)); err != nil {
		return fmt.Errorf("bind %s: %w", b.Source, err)
	}
	return nil
}

func (t *tree) tmpfs(m Tmpfs) error {
	attrs := attrsSafe
	if m.NoExec {
		attrs |= unix.MOUNT_ATTR_NOEXEC
	}
	mfd, err := newFS("tmpfs", []fsOption{
		{"size", strconv.FormatInt(m.Size, 10)}, {"nr_inodes", strconv.FormatInt(m.Inodes, 10)},
		{"mode", fmt.Sprintf("%o", uint32(m.Mode))}, {"uid", strconv.Itoa(m.UID)}, {"gid", strconv.Itoa(m.GID)},
	}, attrs)
	if err != nil {
		return fmt.Errorf("tmpfs %s: %w", m.Target, err)
	}
	defer unix.Close(mfd)
	if err := t.claim(mfd); err != nil {
		return fmt.Errorf("tmpfs %s: %w", m.Target, err)
	}
	if err := t.mountOn(mfd, m.Target, true); err != nil {
		return fmt.Errorf("tmpfs %w", err)
	}
	return nil
}

func (t *tree) symlink(s Symlink) error {
	dir, name := path.Split(s.Path)
	parent, err := t.ensure(path.Clean(dir), true, 0o755)
	if err != nil {
		return fmt.Errorf("symlink %w", err)
	}
	defer unix.Close(parent)
	_, id, err := statPath(parent)
	if err != nil {
		return fmt.Errorf("symlink %s: %w", s.Path, err)
	}
	if !t.own[id] {
		return fmt.Errorf("symlink %s: its directory is the host's (a bind), where Enter creates nothing", s.Path)
	}
	if err := t.asOwner(func() error { return unix.Symlinkat(s.Target, parent, name) }); err != nil {
		return fmt.Errorf("symlink %s -> %s: %w", s.Path, s.Target, err)
	}
	return nil
}

// readOnly re-binds p (inside) onto itself read-only, with the mounts
// under it. A path that does not exist is skipped.
func (t *tree) readOnly(p string) error {
	fd, err := openPath(t.root, p, resolveInside)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read-only %s: %w", p, err)
	}
	defer unix.Close(fd)
	mfd, err := cloneTree(fd, true)
	if err != nil {
		return fmt.Errorf("read-only %s: %w", p, err)
	}
	defer unix.Close(mfd)
	if err := setAttrs(mfd, true, attrsRO); err != nil {
		return fmt.Errorf("read-only %s: %w", p, err)
	}
	if err := attach(mfd, fd); err != nil {
		return fmt.Errorf("read-only %s: %w", p, err)
	}
	return nil
}

// mask covers what p (inside) resolves to: an empty read-only tmpfs of mode
// 000 over a directory, the empty read-only file over anything else. A
// path that does not exist is skipped: there is nothing to hide.
func (t *tree) mask(p string) error {
	fd, err := openPath(t.root, p, resolveInside)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mask %s: %w", p, err)
	}
	defer unix.Close(fd)
	mode, _, err := statPath(fd)
	if err != nil {
		return fmt.Errorf("mask %s: %w", p, err)
	}
	mfd, err := t.cover(isDir(mode))
	if err != nil {
		return fmt.Errorf("mask %s: %w", p, err)
	}
	defer unix.Close(mfd)
	if err := attach(mfd, fd); err != nil {
		return fmt.Errorf("mask %s: %w", p, err)
	}
	return nil
}

// cover returns a detached, empty, read-only mount to put over a directory
// or a file.
func (t *tree) cover(dir bool) (int, error) {
	if dir {
		return newFS("tmpfs", []fsOption{{"size", "4096"}, {"nr_inodes", "2"}, {"mode", "0"}}, attrsMask)
	}
	mfd, err := cloneTree(t.empty, false)
	if err != nil {
		return -1, err
	}
	if err := setAttrs(mfd, false, attrsMask); err != nil {
		unix.Close(mfd)
		return -1, err
	}
	return mfd, nil
}
