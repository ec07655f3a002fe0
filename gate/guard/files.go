package guard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The cache, its secret and the scripts may sit where the sandboxed agent
// writes, while this code runs on the host (often as root). So files are
// opened without following a final symlink and without blocking on a FIFO,
// and their type is checked on the descriptor before use.

const (
	dirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	readFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
)

// openParent opens the directory holding path, refusing a symlink as its
// last component; with create, missing directories are made 0700.
func openParent(path string, create bool) (int, error) {
	dir := filepath.Dir(path)
	if create {
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return -1, fmt.Errorf("creating %s: %w", dir, err)
			}
		}
	}
	fd, err := unix.Open(dir, dirFlags, 0)
	if err != nil {
		return -1, describe(dir, "a directory", err)
	}
	return fd, nil
}

// readRegularAt reads at most max bytes of the regular file name in dirfd;
// truncated reports a longer file.
func readRegularAt(dirfd int, name, shown string, max int64) (data []byte, truncated bool, err error) {
	fd, err := unix.Openat(dirfd, name, readFlags, 0)
	if err != nil {
		return nil, false, describe(shown, "a regular file", err)
	}
	f := os.NewFile(uintptr(fd), shown)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", shown, err)
	}
	if !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file (%s)", shown, st.Mode().Type())
	}
	data, err = io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", shown, err)
	}
	if int64(len(data)) > max {
		return data[:max], true, nil
	}
	return data, false, nil
}

// replaceAt writes data to name in dirfd atomically: a fresh temporary file
// (O_EXCL, 0600) renamed over it, so a symlink planted at name is replaced,
// never followed, and readers see the old or the new file whole.
func replaceAt(dirfd int, name, shown string, data []byte) error {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("naming a temporary file: %w", err)
	}
	tmp := "." + name + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("creating a temporary file next to %s: %w", shown, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("writing %s: %w", shown, err)
	}
	return nil
}

// describe turns the errnos of a refused open into what was found.
func describe(path, what string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EMLINK):
		return fmt.Errorf("%s is a symlink, not %s; not following it", path, what)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s (or a directory above it) is not a directory", path)
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%s is a directory, not %s", path, what)
	}
	return fmt.Errorf("opening %s: %w", path, err)
}

// within reports whether path (clean, absolute) is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
