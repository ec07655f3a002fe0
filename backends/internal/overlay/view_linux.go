//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CoverView binds source (a host directory) in the set as name, private to
// this mount namespace's view so nothing mounted in it reaches the host's
// directory, and binds the file empty read-only over each of cover (host
// paths under source: sockets a runtime that connects host sockets would
// otherwise reach). It returns the view's path, for the sandbox's bind in
// place of source; the view goes with the set (RemoveAt). Each cover is
// resolved beneath the view with no symlink followed (a path the policy
// canonicalised has none): one that resolves otherwise is refused.
func (s *Set) CoverView(name, source, empty string, cover []string) (string, error) {
	// Named as a lower layer is: every release's RemoveAt (an older
	// binary's sweep too) detaches it, and all mounted in it, before it
	// deletes anything under the set; a name it does not know would be
	// deleted through, into the host's directory.
	view := filepath.Join(s.dir, "cover-"+name+".lower")
	if err := os.Mkdir(view, 0o700); err != nil {
		return "", err
	}
	if err := unix.Mount(source, view, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return "", fmt.Errorf("binding %s: %w", source, err)
	}
	// Before anything is mounted in it: a view of a shared mount would
	// pass its mounts on to the host's directory.
	if err := unix.Mount("", view, "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		return "", fmt.Errorf("making the view of %s private: %w", source, err)
	}
	// Read-only throughout: nothing that walks the bundle reaches the
	// host's directory to change it (the runtime's bind is read-only too).
	err := unix.MountSetattr(-1, view, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if errors.Is(err, unix.ENOSYS) {
		err = unix.Mount("", view, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
	}
	if err != nil {
		return "", fmt.Errorf("making the view of %s read-only: %w", source, err)
	}
	root, err := unix.Open(view, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(root)
	for _, c := range cover {
		rel, err := filepath.Rel(source, c)
		if err != nil || rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
			return "", fmt.Errorf("%s does not lie under %s", c, source)
		}
		fd, err := unix.Openat2(root, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return "", fmt.Errorf("covering %s: %w", c, err)
		}
		err = unix.Mount(empty, "/proc/self/fd/"+strconv.Itoa(fd), "", unix.MS_BIND, "")
		unix.Close(fd)
		if err != nil {
			return "", fmt.Errorf("covering %s: %w", c, err)
		}
	}
	return view, nil
}
