// Package hostfs holds the few host filesystem operations the sandbox needs
// beyond os: granting the sandbox identity access to a writable path.
package hostfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// EnsureWritableBy makes the open file fd (at path, for messages) writable
// (and, for a directory, searchable) by uid:gid without changing its owner
// or mode: nothing is done when the mode already allows it, otherwise a
// POSIX ACL entry for uid is added (and, on a directory, a default entry so
// what the sandbox creates stays usable). It works on the descriptor, so a
// path swapped for a symlink meanwhile changes nothing elsewhere.
func EnsureWritableBy(fd int, path string, uid, gid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	isDir := uint32(st.Mode)&unix.S_IFMT == unix.S_IFDIR
	need := uint32(0o2) // w
	if isDir {
		need |= 0o1 // x
	}
	mode := uint32(st.Mode) & 0o777
	switch {
	case int(st.Uid) == uid && (mode>>6)&need == need:
		return nil
	case int(st.Uid) != uid && int(st.Gid) == gid && (mode>>3)&need == need:
		return nil
	case int(st.Uid) != uid && int(st.Gid) != gid && mode&need == need:
		return nil
	}
	if err := grantACL(fd, path, isDir, mode, uid); err != nil {
		return fmt.Errorf("%w (give uid %d write access yourself, or set [sandbox] user)", err, uid)
	}
	return nil
}
