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

// The directories triage-sandbox keeps its own state in (keeper sockets,
// control sockets, bundles, per-run directories, the audit log) often lie
// below a directory every user can write (/tmp). Another user could make
// them first and plant symlinks under the names we use; so each one is
// walked by descriptor from "/" and checked before use: every directory
// on the way is root's or the caller's and writable by no one else unless
// sticky (so no other user can replace what lies below it), and the
// directory itself is the caller's, not a symlink, and (for PrivateDir)
// mode 0700. Missing directories are created 0700 on the way. After that
// check, plain path operations below it are safe: nobody else can change
// what the path names.

// PrivateDir makes dir (0700, with any missing parents) or reuses it, and
// refuses it unless it is the caller's alone: owned by the caller, not a
// symlink, no group or other permission bits, and every directory above it
// out of other users' reach.
func PrivateDir(dir string) error { return ownDir(dir, 0o077) }

// OwnedDir is PrivateDir for a directory others may read and search but
// not write (a root filesystem cache, the audit log's directory).
func OwnedDir(dir string) error { return ownDir(dir, 0o022) }

func ownDir(dir string, forbidden uint32) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	fd, err := walkDir(abs, forbidden)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// walkDir opens abs component by component, creating what is missing,
// and returns a descriptor of it once every check passed.
func walkDir(abs string, forbidden uint32) (int, error) {
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening /: %w", err)
	}
	parts := splitRel(strings.TrimPrefix(abs, "/"))
	cur := "/"
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		last := i == len(parts)-1
		next, err := openComponent(fd, part, cur, last)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
		if err := checkDir(fd, cur, last, forbidden); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// openComponent opens name in dirfd as a directory, making it (0700) when
// missing. A symlink is followed only above the directory itself, and only
// one root or the caller made (a system's /tmp -> /private/tmp); one
// another user planted is refused.
func openComponent(dirfd int, name, path string, last bool) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ENOENT) {
		if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("creating %s: %w", path, err)
		}
		fd, err = unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW, 0)
	}
	if err == nil {
		return fd, nil
	}
	var st unix.Stat_t
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) ||
		unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		uint32(st.Mode)&unix.S_IFMT != unix.S_IFLNK {
		return -1, refuse(path, explain(path, "a directory", err).Error())
	}
	if last {
		return -1, refuse(path, "is a symlink, not a directory of yours")
	}
	if !trustedOwner(st.Uid) {
		return -1, refuse(path, fmt.Sprintf("is a symlink made by uid %d, not by you or root", st.Uid))
	}
	fd, err = unix.Openat(dirfd, name, flags, 0)
	if err != nil {
		return -1, refuse(path, explain(path, "a directory", err).Error())
	}
	return fd, nil
}

// checkDir checks the directory open at fd: the last one is the caller's
// with none of the forbidden mode bits; one above it is root's or the
// caller's and writable by no one else unless sticky.
func checkDir(fd int, path string, last bool, forbidden uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	mode := uint32(st.Mode)
	if mode&unix.S_IFMT != unix.S_IFDIR {
		return refuse(path, "is "+typeName(mode)+", not a directory")
	}
	euid := uint32(os.Geteuid())
	switch {
	case last && st.Uid != euid:
		return refuse(path, fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, euid))
	case last && mode&forbidden != 0:
		want := "mode 0700 (yours alone): chmod 700"
		if forbidden == 0o022 {
			want = "writable by you alone: chmod go-w"
		}
		return fmt.Errorf("%s has mode %#o, so others could plant files in it; it must be %s %s if you made it, otherwise remove it", path, mode&0o7777, want, path)
	case !last && !trustedOwner(st.Uid):
		return refuse(path, fmt.Sprintf("is owned by uid %d, not by you or root", st.Uid))
	case !last && mode&0o022 != 0 && mode&unix.S_ISVTX == 0:
		return refuse(path, fmt.Sprintf("has mode %#o: other users could replace what lies below it", mode&0o7777))
	}
	return nil
}

func trustedOwner(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

// refuse is the one-line refusal: the path, what is wrong, what to do.
func refuse(path, why string) error {
	return fmt.Errorf("%s %s: another user may have made it to take over triage-sandbox's files; remove it (or choose another directory) and run again", path, why)
}

// OpenNoFollow opens path (in a directory PrivateDir checked) like
// os.OpenFile, but never through a symlink in its last component, never
// blocking on a FIFO, and only when it is a regular file.
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := unix.Open(path, flag|unix.O_NONBLOCK|openFlags, uint32(perm.Perm()))
	if err != nil {
		return nil, explain(path, "a regular file", err)
	}
	if err := wantType(fd, path, unix.S_IFREG, "a regular file"); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// WriteFileReplace writes data to path by way of a new file beside it
// (created exclusively, 0600) renamed over it: a reader sees the old or
// the new content, and nothing planted under the temporary name is
// written through.
func WriteFileReplace(path string, data []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	_ = os.Remove(tmp) // a crashed writer's, with our pid
	f, err := OpenNoFollow(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
