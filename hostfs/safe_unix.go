//go:build unix

package hostfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A sandbox can write inside its writable paths while triage-sandbox (often
// root) works on the host side. Every host-side operation on such a path
// therefore goes through file descriptors opened without following
// symlinks and without blocking on FIFOs, and checks the file type before
// use: a planted symlink, FIFO, device or directory is refused, never
// followed, opened for reading or waited on.

const openFlags = unix.O_CLOEXEC | unix.O_NOFOLLOW

// Kinds of writable path.
const (
	KindDir  = "dir"
	KindFile = "file"
)

// OpenDirBeneath opens root/rel as a directory, refusing any symlink on the
// way; missing components are created (0755) when create is set.
func OpenDirBeneath(root, rel string, create bool) (int, error) {
	return openDirBeneath(root, rel, create)
}

func openDirBeneath(root, rel string, create bool) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening %s: %w", root, err)
	}
	cur := root
	for _, part := range splitRel(rel) {
		cur = filepath.Join(cur, part)
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err := unix.Mkdirat(fd, part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, fmt.Errorf("creating %s: %w", cur, err)
			}
			next, err = unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
		}
		unix.Close(fd)
		if err != nil {
			return -1, explain(cur, "a directory", err)
		}
		fd = next
	}
	return fd, nil
}

// OpenWritable opens (creating it when missing) the writable path rel below
// root as kind: a directory, or an empty regular file. It returns an fd the
// caller must close; no component may be a symlink and the final one must
// already be of the wanted kind.
func OpenWritable(root, rel, kind string) (int, error) {
	parts := splitRel(rel)
	if len(parts) == 0 {
		return -1, fmt.Errorf("%s: the workspace root itself cannot be a writable path", root)
	}
	if kind == KindDir {
		return openDirBeneath(root, rel, true)
	}
	dir, err := openDirBeneath(root, filepath.Join(parts[:len(parts)-1]...), true)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dir)
	name := parts[len(parts)-1]
	full := filepath.Join(root, rel)
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NONBLOCK|openFlags, 0o644)
	if errors.Is(err, unix.EEXIST) {
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_NONBLOCK|openFlags, 0)
	}
	if err != nil {
		return -1, explain(full, "a regular file", err)
	}
	if err := wantType(fd, full, unix.S_IFREG, "a regular file"); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// OpenAppend opens path for appending (creating it 0600, and its parent
// directories 0700): never through a symlink in its last component, never
// a FIFO, a device or a directory.
func OpenAppend(path string) (int, error) {
	if err := mkdirAll(filepath.Dir(path)); err != nil {
		return -1, err
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NONBLOCK|openFlags, 0o600)
	if err != nil {
		return -1, explain(path, "a regular file", err)
	}
	if err := wantType(fd, path, unix.S_IFREG, "a regular file"); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func mkdirAll(dir string) error {
	if dir == "/" || dir == "." {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err == nil {
		if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := mkdirAll(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := unix.Mkdir(dir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return nil
}

func wantType(fd int, path string, want uint32, what string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if uint32(st.Mode)&unix.S_IFMT != want {
		return fmt.Errorf("%s is %s, not %s; remove it", path, typeName(uint32(st.Mode)), what)
	}
	return nil
}

// explain turns the errnos of a refused open into what was found.
func explain(path, what string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EMLINK):
		return fmt.Errorf("%s is a symlink, not %s; triage-sandbox never follows one there: remove it", path, what)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s (or a directory above it) is not a directory, where %s was expected; remove it", path, what)
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%s is a directory, not %s; remove it", path, what)
	case errors.Is(err, unix.ENXIO):
		return fmt.Errorf("%s is a FIFO or socket with no reader, not %s; remove it", path, what)
	}
	return fmt.Errorf("opening %s: %w", path, err)
}

func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFREG:
		return "a regular file"
	}
	return "of an unknown type"
}

// splitRel splits a relative path; ".." never appears in a writable path
// (policy refuses it), and is dropped here so nothing can climb out.
func splitRel(rel string) []string {
	var out []string
	for _, p := range strings.Split(filepath.Clean(rel), "/") {
		if p != "" && p != "." && p != ".." {
			out = append(out, p)
		}
	}
	return out
}

func newDirFile(fd int) *os.File { return os.NewFile(uintptr(fd), "dir") }
