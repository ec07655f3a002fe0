package hostfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames, failing with EEXIST when to exists.
func renameNoReplace(olddirfd int, from string, newdirfd int, to string) error {
	err := unix.RenameatxNp(olddirfd, from, newdirfd, to, unix.RENAME_EXCL)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return renameIfAbsent(olddirfd, from, newdirfd, to) // a filesystem without the flag
	}
	return err
}
