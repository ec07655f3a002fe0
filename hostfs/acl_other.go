//go:build !linux

package hostfs

import "errors"

func grantACL(fd int, path string, isDir bool, mode uint32, uid int) error {
	return errors.New("granting access by ACL is only implemented on Linux")
}
