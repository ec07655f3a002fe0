// Package hostfs holds the few host filesystem operations the sandbox needs
// beyond os: granting the sandbox identity access to a writable path.
package hostfs

import (
	"fmt"
	"os"
	"syscall"
)

// EnsureWritableBy makes path writable (and, for a directory, searchable) by
// uid:gid without changing its owner or mode: nothing is done when the mode
// already allows it, otherwise a POSIX ACL entry for uid is added (and, on a
// directory, a default entry so what the sandbox creates stays usable).
func EnsureWritableBy(path string, uid, gid int) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("no ownership information for %s", path)
	}
	need := uint32(0o2) // w
	if fi.IsDir() {
		need |= 0o1 // x
	}
	mode := uint32(fi.Mode().Perm())
	switch {
	case int(st.Uid) == uid && (mode>>6)&need == need:
		return nil
	case int(st.Uid) != uid && int(st.Gid) == gid && (mode>>3)&need == need:
		return nil
	case int(st.Uid) != uid && int(st.Gid) != gid && mode&need == need:
		return nil
	}
	if err := grantACL(path, fi.IsDir(), mode, uid); err != nil {
		return fmt.Errorf("%w (give uid %d write access yourself, or set [sandbox] user)", err, uid)
	}
	return nil
}
