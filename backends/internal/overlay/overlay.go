// Package overlay gives a sandbox's discard mounts (policy.Mount.Discard,
// the project checkout) a writable view whose writes go nowhere: an
// overlay whose lower layer is the host directory and whose upper layer is
// a tmpfs of the sandbox's own, bounded like the staged writable paths
// (size, inodes, nosuid, nodev). The container backends bind the merged
// directory where the read-only host directory would be. The host's
// directory is never written: overlayfs copies up into the upper layer.
//
// Making one needs root on the host (mount(2)); where that is missing,
// Make says why and the backend keeps the read-only bind (fail closed: no
// write reaches anything). Every set lives in a directory of its own
// under a backend's state directory, removed by Remove, or, when its
// owner died, by the next start's sweep (the backend's, which calls
// RemoveAt on the directory it finds stale).
package overlay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Set is the overlays of one sandbox.
type Set struct {
	dir string
	// Sources maps a discard mount's path to the merged directory to bind
	// there, writable.
	Sources map[string]string
}

// Wanted reports whether p has a discard mount.
func Wanted(p *policy.Policy) bool {
	for _, m := range p.Mounts {
		if discard(m) {
			return true
		}
	}
	return false
}

func discard(m policy.Mount) bool { return m.Discard && m.ReadOnly && m.Kind == "dir" }

// Discarded reports whether m is a discard mount: a read-only directory
// whose writes an overlay takes and throws away.
func Discarded(m policy.Mount) bool { return discard(m) }

// Available says why overlays cannot be made here, nil when they can.
func Available() error {
	if err := platformSupported(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("an overlay needs root on the host")
	}
	fs, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return fmt.Errorf("reading /proc/filesystems: %w", err)
	}
	if !bytes.Contains(fs, []byte("\toverlay\n")) {
		return errors.New("the kernel has no overlay filesystem")
	}
	return nil
}

// Make mounts an overlay for each discard mount of p in dir (created
// here, 0700; it must not exist). On error nothing stays mounted.
func Make(dir string, p *policy.Policy) (*Set, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the overlays' directory: %w", err)
	}
	s := &Set{dir: dir, Sources: map[string]string{}}
	if err := writeOwner(dir); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("the overlays' owner record: %w", err)
	}
	for i, m := range p.Mounts {
		if !discard(m) {
			continue
		}
		merged, err := s.mountOne(strconv.Itoa(i), m.Path, [2]int{p.User.UID, p.User.GID}, p.Limits.WritableSize, p.Limits.WritableInodes)
		if err != nil {
			_ = s.Remove()
			return nil, fmt.Errorf("the overlay of %s (%s): %w", m.Path, m.Why, err)
		}
		s.Sources[m.Path] = merged
	}
	return s, nil
}

// mountOne mounts name's tmpfs (the upper layer) and its overlay, and
// returns the merged directory. id is the sandbox's uid and gid: when the
// host directory's owner is another, its lower layer is an id-mapped view
// in which that owner's files are the sandbox's (idmapLower).
func (s *Set) mountOne(name, lower string, id [2]int, size, inodes int64) (string, error) {
	if err := CheckLower(lower); err != nil {
		return "", err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(lower, &st); err != nil {
		return "", err
	}
	layer, merged := filepath.Join(s.dir, name+".layer"), filepath.Join(s.dir, name+".merged")
	for _, d := range []string{layer, merged} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", err
		}
	}
	owner := [2]int{int(st.Uid), int(st.Gid)}
	if owner != id {
		mapped := filepath.Join(s.dir, name+".lower")
		if err := os.Mkdir(mapped, 0o700); err != nil {
			return "", err
		}
		// A file system that takes no id mapping keeps the plain lower
		// layer: the sandbox writes there what the host lets it, and a
		// refused write's hint names the owner.
		if err := idmapLower(lower, mapped, owner, id); err == nil {
			lower, owner = mapped, id
		}
	}
	opts := fmt.Sprintf("size=%d,mode=0700", max(size, 1<<20))
	if inodes > 0 {
		opts += fmt.Sprintf(",nr_inodes=%d", inodes)
	}
	if err := mount("tmpfs", layer, "tmpfs", msNoSUID|msNoDev, opts); err != nil {
		return "", fmt.Errorf("mounting its upper layer's tmpfs: %w", err)
	}
	upper, work := filepath.Join(layer, "upper"), filepath.Join(layer, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", err
		}
	}
	// The merged root is the upper root: it takes the (mapped) host
	// directory's owner and mode, so the sandbox may write exactly where
	// the host directory would let its owner.
	if err := os.Lchown(upper, owner[0], owner[1]); err != nil {
		return "", err
	}
	if err := os.Chmod(upper, os.FileMode(st.Mode&0o777)); err != nil {
		return "", err
	}
	data := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := mount("overlay", merged, "overlay", msNoSUID|msNoDev, data); err != nil {
		return "", fmt.Errorf("mounting the overlay: %w", err)
	}
	return merged, nil
}

// CheckLower refuses a lower directory whose path an overlay's options
// cannot carry.
func CheckLower(lower string) error {
	if strings.ContainsAny(lower, ",:\\\n") {
		return fmt.Errorf("its path holds a character an overlay's options cannot carry (, : \\ or a newline); set [sandbox] checkout_writes = \"refuse\" or move it")
	}
	return nil
}

// NewSet makes an empty set in dir (created here, 0700; it must not
// exist), for tmpfs mounts alone (MountTmpfs).
func NewSet(dir string) (*Set, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("mounting a tmpfs needs root on the host")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the mounts' directory: %w", err)
	}
	if err := writeOwner(dir); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("the mounts' owner record: %w", err)
	}
	return &Set{dir: dir, Sources: map[string]string{}}, nil
}

// MountTmpfs mounts a tmpfs with opts (a Docker tmpfs option string:
// rw|ro, nosuid, nodev, exec|noexec, size=, nr_inodes=, mode=, uid=, gid=)
// in the set as name, and returns its path: the host's own bounded
// filesystem for an engine that cannot bound one itself, removed with the
// set.
func (s *Set) MountTmpfs(name, opts string) (string, error) {
	flags, data, err := tmpfsOptions(opts)
	if err != nil {
		return "", err
	}
	path := filepath.Join(s.dir, name+".tmpfs")
	if err := os.Mkdir(path, 0o700); err != nil {
		return "", err
	}
	if err := mount("tmpfs", path, "tmpfs", flags, data); err != nil {
		return "", fmt.Errorf("mounting a tmpfs (%s): %w", data, err)
	}
	return path, nil
}

// tmpfsFlags are the option words that are mount flags.
var tmpfsFlags = map[string]uintptr{
	"rw": 0, "ro": msReadOnly, "exec": 0, "noexec": msNoExec,
	"suid": 0, "nosuid": msNoSUID, "dev": 0, "nodev": msNoDev,
}

// tmpfsData are the options tmpfs takes as data.
var tmpfsData = map[string]bool{"size": true, "nr_inodes": true, "mode": true, "uid": true, "gid": true}

func tmpfsOptions(opts string) (uintptr, string, error) {
	var flags uintptr
	var data []string
	for _, o := range strings.Split(opts, ",") {
		k, _, _ := strings.Cut(o, "=")
		if f, ok := tmpfsFlags[o]; ok {
			flags |= f
		} else if tmpfsData[k] {
			data = append(data, o)
		} else {
			return 0, "", fmt.Errorf("unknown tmpfs option %q", o)
		}
	}
	return flags, strings.Join(data, ","), nil
}

// Remove unmounts the set and deletes its directory. It is idempotent.
func (s *Set) Remove() error {
	if s == nil {
		return nil
	}
	return RemoveAt(s.dir)
}

// RemoveAt unmounts every overlay and upper layer under dir (a set's
// directory, or one a dead owner left) and deletes it. The merged
// directories go first; nothing is deleted while anything under dir is
// still mounted, so a failed unmount never reaches a host directory.
func RemoveAt(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, suffix := range []string{".merged", ".layer", ".lower", ".tmpfs"} {
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), suffix) {
				continue
			}
			if err := unmount(filepath.Join(dir, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing the overlays in %s: %w", dir, err)
	}
	return os.RemoveAll(dir)
}

// unmount detaches what is mounted at path (nothing is fine), then checks
// nothing is.
func unmount(path string) error {
	for range 4 {
		err := detach(path)
		if errors.Is(err, errNotMounted) {
			return nil // not a mount point (any more)
		}
		if err != nil {
			return fmt.Errorf("unmounting %s: %w", path, err)
		}
	}
	return fmt.Errorf("unmounting %s: still mounted", path)
}

// For makes p's overlays in dir when p has discard mounts. A set that
// cannot be made leaves those mounts read-only: warning says so (and why),
// for the sandbox's warnings.
func For(dir string, p *policy.Policy) (s *Set, warning string) {
	if !Wanted(p) {
		return nil, ""
	}
	s, err := Make(dir, p)
	if err != nil {
		return nil, "the project checkout is read-only in this sandbox, so writes under it fail: " + err.Error() +
			" ([sandbox] checkout_writes = \"discard\" needs it; \"refuse\" says read-only is meant)"
	}
	return s, ""
}

// Source is where path's bind comes from: its merged directory in s, else
// path itself (read-only). rw says whether the bind is writable.
func (s *Set) Source(path string) (src string, rw bool) {
	if s != nil {
		if m, ok := s.Sources[path]; ok {
			return m, true
		}
	}
	return path, false
}

// ownerRecord names a set's owner: a set whose owner is gone is stale.
type ownerRecord struct {
	PID   int    `json:"pid"`
	Start string `json:"start"`
}

const recordName = "owner.json"

func writeOwner(dir string) error {
	b, err := json.Marshal(ownerRecord{PID: os.Getpid(), Start: ownership.ProcessStart(os.Getpid())})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, recordName), b, 0o600)
}

// Sweep removes the sets under parent whose owner is gone (a kill -9 of
// the process that made them), by their records alone.
func Sweep(parent string) ([]string, error) {
	stale, err := ownership.StaleDirs(parent, recordName, nil, func(r ownerRecord) bool {
		return ownership.OwnerAlive(r.PID, r.Start)
	})
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, s := range stale {
		if err := RemoveAt(s.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, s.Name)
	}
	return removed, errors.Join(errs...)
}

// MapOwner gives a discarded directory whose owner is not the sandbox's
// ids a read-only, id-mapped view at target (created here, 0700, in a
// directory of root's alone) in which the owner's files are the sandbox's
// (id: uid and gid), for a backend that makes the overlay itself from it
// (the local helper). mapped is false when no view is needed (the owner
// is the sandbox's) or none could be made (not root; a file system that
// takes no id mapping): the directory is then used as it is. Unmount
// target before removing what holds it.
func MapOwner(dir, target string, id [2]int) (mapped bool) {
	var st syscall.Stat_t
	if os.Geteuid() != 0 || syscall.Stat(dir, &st) != nil {
		return false
	}
	owner := [2]int{int(st.Uid), int(st.Gid)}
	if owner == id || os.Mkdir(target, 0o700) != nil {
		return false
	}
	if err := idmapLower(dir, target, owner, id); err != nil {
		_ = os.Remove(target)
		return false
	}
	return true
}

// Unmount detaches what is mounted at path (nothing mounted is fine) and
// checks nothing is left.
func Unmount(path string) error { return unmount(path) }
