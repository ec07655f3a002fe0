package hostfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames, failing with EEXIST when to exists.
func renameNoReplace(olddirfd int, from string, newdirfd int, to string) error {
	err := unix.Renameat2(olddirfd, from, newdirfd, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return renameIfAbsent(olddirfd, from, newdirfd, to) // a filesystem without the flag
	}
	return err
}
