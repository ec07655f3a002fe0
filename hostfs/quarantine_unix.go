//go:build unix

package hostfs

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// The quarantine fails closed. A tool config is renamed to a name no run
// chose before, NAME.quarantined-by-triage-sandbox-STAMP-RANDOM, by a
// rename that never replaces (RENAME_NOREPLACE, RENAME_EXCL): an entry
// already there (an earlier run's quarantine, a planted symlink) neither
// blocks the move nor is replaced by it; a taken name draws another. What
// cannot be moved aside is removed, and what cannot be removed either is
// reported as still live: it is never left in place quietly.

// quarantineTries bounds the names drawn for one entry.
const quarantineTries = 4

// quarantineName is a fresh quarantine name for name.
func quarantineName(name string) string {
	var r [4]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand crashes the program instead)
	return fmt.Sprintf("%s%s-%s-%x", name, QuarantineSuffix, time.Now().UTC().Format("20060102T150405Z"), r)
}

// quarantine moves the tool config name (in the directory fd) out of the
// tools' way, or removes it, and says which.
func (w *walker) quarantine(fd int, name, child string, mode uint32) {
	l := Leftover{Path: child, Kind: "tool-config", Detail: typeName(mode)}
	to, err := w.moveAside(fd, name)
	if err == nil {
		l.Action = "renamed to " + to
	} else if rerr := w.removeIn(fd, name); rerr == nil {
		l.Action = "removed: it could not be moved aside"
		w.fail(fmt.Errorf("%s could not be moved out of the tools' way (%w); removed it", child, err))
	} else {
		l.Action = "LEFT IN PLACE: it could not be moved aside nor removed"
		w.fail(fmt.Errorf("%s could not be moved out of the tools' way (%w) nor removed (%w): it is still live; do not open these outputs with git, an editor or direnv", child, err, rerr))
	}
	w.add(l)
}

// moveAside renames name to a fresh quarantine name in the same directory.
func (w *walker) moveAside(fd int, name string) (string, error) {
	var err error
	for range quarantineTries {
		to := quarantineName(name)
		err = inWritableDir(fd, func() error { return w.rename(fd, name, fd, to) })
		if err == nil {
			return to, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", err
		}
	}
	return "", err
}

func (w *walker) removeIn(fd int, name string) error {
	return inWritableDir(fd, func() error { return w.remove(fd, name) })
}

// inWritableDir runs op on an entry of the directory fd; when op is denied
// and the directory is ours (a run can leave it read-only), the directory
// is made writable for its owner and op tried again.
func inWritableDir(fd int, op func() error) error {
	err := op()
	if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
		return err
	}
	if makeOwnerWritable(fd) != nil {
		return err
	}
	return op()
}

// makeOwnerWritable adds u+rwx to the directory fd when the caller owns it.
func makeOwnerWritable(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != unix.Geteuid() {
		return unix.EPERM
	}
	if st.Mode&0o700 == 0o700 {
		return unix.EEXIST // nothing to add: the denial has another cause
	}
	return unix.Fchmod(fd, uint32(st.Mode)&0o7777|0o700)
}

// removeAll removes name in the directory dirfd and, for a directory,
// everything below it, by descriptor and without following a symlink.
func removeAll(dirfd int, name string) error { return removeTree(dirfd, name, 0) }

func removeTree(dirfd int, name string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return inWritableDir(dirfd, func() error { return unix.Unlinkat(dirfd, name, 0) })
	}
	if depth > maxDepth {
		return fmt.Errorf("deeper than %d levels", maxDepth)
	}
	sub, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
	if err != nil {
		return err
	}
	defer unix.Close(sub)
	names, err := readDirNames(sub)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := removeTree(sub, n, depth+1); err != nil {
			return err
		}
	}
	return inWritableDir(dirfd, func() error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
}

// renameIfAbsent is the rename for filesystems without a no-replace flag:
// the name is fresh and random, so only a guess could race it.
func renameIfAbsent(olddirfd int, from string, newdirfd int, to string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(newdirfd, to, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return unix.EEXIST
	}
	return unix.Renameat(olddirfd, from, newdirfd, to)
}
