package hostfs

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// POSIX ACL xattr encoding (linux/posix_acl_xattr.h).
const (
	aclVersion  = 2
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclMask     = 0x10
	aclOther    = 0x20
	aclUndefID  = 0xffffffff
)

// grantACL writes an access ACL (and for directories a default ACL) that keeps
// the mode's owner/group/other bits and adds rwx for uid.
func grantACL(fd int, path string, isDir bool, mode uint32, uid int) error {
	entries := []struct {
		tag  uint16
		perm uint16
		id   uint32
	}{
		{aclUserObj, uint16(mode >> 6 & 7), aclUndefID},
		{aclUser, 7, uint32(uid)},
		{aclGroupObj, uint16(mode >> 3 & 7), aclUndefID},
		{aclMask, 7, aclUndefID},
		{aclOther, uint16(mode & 7), aclUndefID},
	}
	buf := make([]byte, 4, 4+8*len(entries))
	binary.LittleEndian.PutUint32(buf, aclVersion)
	for _, e := range entries {
		buf = binary.LittleEndian.AppendUint16(buf, e.tag)
		buf = binary.LittleEndian.AppendUint16(buf, e.perm)
		buf = binary.LittleEndian.AppendUint32(buf, e.id)
	}
	if err := unix.Fsetxattr(fd, "system.posix_acl_access", buf, 0); err != nil {
		return fmt.Errorf("setting an ACL on %s: %w", path, err)
	}
	if isDir {
		if err := unix.Fsetxattr(fd, "system.posix_acl_default", buf, 0); err != nil {
			return fmt.Errorf("setting a default ACL on %s: %w", path, err)
		}
	}
	return nil
}
