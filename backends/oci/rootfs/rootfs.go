// Package rootfs keeps images' root filesystems unpacked on disk, once per
// image ID, for the oci backend to hand runc as a bundle's rootfs.
//
// Layout of a cache directory:
//
//	<Dir>/<id-hex>.lock      flock: shared while a root is in use, exclusive to unpack or evict
//	<Dir>/<id-hex>/complete  marker (JSON Entry); an entry without one is crash debris
//	<Dir>/<id-hex>/rootfs    the root filesystem, read-only by convention
//	<Dir>/<id-hex>.tmp-*     an unpack in progress (or debris, when no one holds the lock)
//
// An unpack fills a temporary directory and renames it into place with its
// marker already inside, so a root is either absent or complete. The entry
// directory is 0700: the tree keeps the image's modes, set-id bits included
// (runc runs the sandbox with no_new_privs, so they give nothing inside),
// and host users must not reach those binaries through the cache.
package rootfs

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/internal/progress"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// The throwaway container an unpack exports is labelled profiles.LabelOwner
// = OwnerValue, LabelImage = the image ID's hex, and the parent host and pid.
const (
	LabelImage = "io.triage-sandbox.rootfs-image"
	// OwnerValue differs from the sandboxes' "triage-sandbox" so the docker
	// backend's sweep and this package never take each other's containers.
	OwnerValue = "triage-sandbox-rootfs"
)

const markerName = "complete"

// markerFormat is what a complete root was made by; a root an older
// format made is unpacked again. 2: a daemon export's /.dockerenv is left
// out.
const markerFormat = 2

// ErrNotCached is returned by AcquireID when the image has no complete root.
var ErrNotCached = errors.New("rootfs: image not unpacked in the cache")

// errBusy: a non-blocking lock attempt found the lock held.
var errBusy = errors.New("lock held")

// Cache is a directory of unpacked root filesystems keyed by image ID.
type Cache struct{ Dir string }

// DefaultDir is where the cache lives: /var/cache/triage-sandbox/rootfs for
// root, else $XDG_CACHE_HOME/triage-sandbox/rootfs (when absolute) or
// home/.cache/triage-sandbox/rootfs. Root ignores XDG_CACHE_HOME: under
// `sudo -E` it names the invoking user's directory, and roots that runc runs
// as root must not sit where another user can swap them.
func DefaultDir(home string, getenv func(string) (string, bool)) string {
	return defaultDir(os.Geteuid(), home, getenv)
}

func defaultDir(euid int, home string, getenv func(string) (string, bool)) string {
	if euid == 0 {
		return "/var/cache/triage-sandbox/rootfs"
	}
	if getenv == nil {
		getenv = os.LookupEnv
	}
	if v, ok := getenv("XDG_CACHE_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, "triage-sandbox", "rootfs")
	}
	return filepath.Join(home, ".cache", "triage-sandbox", "rootfs")
}

// Entry is the marker of a complete root, stored as JSON in <id>/complete.
type Entry struct {
	Image      string    `json:"image"`       // the reference asked for when unpacked
	ID         string    `json:"id"`          // image ID, sha256:<hex>
	SHA256     string    `json:"sha256"`      // sha256:<hex> of the tar stream(s) unpacked
	Bytes      int64     `json:"bytes"`       // size of those streams
	Files      int       `json:"files"`       // non-directory names created: files, symlinks, hard links
	UnpackedAt time.Time `json:"unpacked_at"` // when
	Source     string    `json:"source"`      // "docker" or "archive:<path>"
	Stats      Stats     `json:"stats"`
	Format     int       `json:"format"` // markerFormat when made
}

// Lease is a root in use: it holds a shared lock on the entry so Evict
// leaves it alone until Close. A Lease is not safe for concurrent Close.
type Lease struct {
	Root     string // absolute path of the root filesystem
	ID       string // image ID, sha256:<hex>
	Entry    Entry  // its marker
	Unpacked bool   // this call unpacked it (first use)
	f        *os.File
}

// Close releases the lease; the root may be evicted afterwards.
func (l *Lease) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Ensure returns the absolute path of image's root filesystem, unpacking it
// from the local Docker daemon on first use. The path is not protected from
// Evict once Ensure returns: a caller that runs a container from it should
// hold Acquire's lease instead.
func (c *Cache) Ensure(ctx context.Context, cli *client.Client, image string) (string, error) {
	l, err := c.Acquire(ctx, cli, image)
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Root, nil
}

// Acquire is Ensure that keeps the root leased until the Lease is closed.
//
// The daemon is asked only for the image's ID; when that ID is already
// unpacked, nothing else is read. Otherwise a container is created from the
// image (never started, labelled owner=triage-sandbox-rootfs, removed in
// every case), exported, and the tar stream unpacked.
func (c *Cache) Acquire(ctx context.Context, cli *client.Client, image string) (*Lease, error) {
	if cli == nil {
		return nil, fmt.Errorf("rootfs: unpacking %q needs the Docker daemon (or an image archive: `docker save` output or an OCI layout, see AcquireArchive); build the image with `triage-sandbox image build`", image)
	}
	img, err := cli.ImageInspect(ctx, image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("rootfs: image %q is not in the Docker daemon; build it with `triage-sandbox image build`: %w", image, err)
		}
		return nil, fmt.Errorf("rootfs: inspecting image %q (unpacking a root filesystem needs the Docker daemon, or an image archive): %w", image, err)
	}
	id := img.ID
	return c.acquire(ctx, image, id, func(ctx context.Context, dst string) (Entry, error) {
		return exportImage(ctx, cli, id, dst)
	})
}

// AcquireID leases the root of an image ID already in the cache, without
// a daemon; ErrNotCached when there is none.
func (c *Cache) AcquireID(ctx context.Context, id string) (*Lease, error) {
	return c.acquire(ctx, id, id, nil)
}

// unpackFunc fills dst (an empty directory) with the image's root and
// returns the marker's content-dependent fields.
type unpackFunc func(ctx context.Context, dst string) (Entry, error)

// acquire: take the shared lock and look for the marker; when absent, take
// the exclusive lock, unpack unless someone did meanwhile, and start over.
// Whoever waits on the exclusive lock then finds the marker: one unpack.
func (c *Cache) acquire(ctx context.Context, image, id string, unpack unpackFunc) (*Lease, error) {
	hexID, err := idHex(id)
	if err != nil {
		return nil, err
	}
	dir, err := c.prepare()
	if err != nil {
		return nil, err
	}
	lockPath := filepath.Join(dir, hexID+".lock")
	entryDir := filepath.Join(dir, hexID)
	unpacked := false
	for {
		f, err := lockFile(ctx, lockPath, unix.LOCK_SH, true)
		if err != nil {
			return nil, err
		}
		if e, err := readMarker(entryDir, hexID); err == nil {
			return &Lease{Root: filepath.Join(entryDir, "rootfs"), ID: "sha256:" + hexID, Entry: e, Unpacked: unpacked, f: f}, nil
		}
		f.Close()
		if unpack == nil {
			return nil, fmt.Errorf("%w: %s", ErrNotCached, id)
		}
		// While waiting for the exclusive lock, another caller may finish
		// the root and hold it leased (shared) for as long as it runs: stop
		// waiting once the marker is there and take the shared path.
		done := func() bool { _, err := readMarker(entryDir, hexID); return err == nil }
		if f, err = lockFileUnless(ctx, lockPath, unix.LOCK_EX, done); errors.Is(err, errDone) {
			continue
		} else if err != nil {
			return nil, err
		}
		if _, merr := readMarker(entryDir, hexID); merr != nil {
			err = c.fill(ctx, dir, hexID, image, unpack)
			unpacked = err == nil
		}
		f.Close()
		if err != nil {
			return nil, err
		}
		// Loop: the root was made under the exclusive lock, and flock cannot
		// downgrade atomically, so check again under the shared one.
	}
}

// fill unpacks into a temporary directory and renames it into place; the
// caller holds the exclusive lock, so anything found for hexID is debris.
func (c *Cache) fill(ctx context.Context, dir, hexID, image string, unpack unpackFunc) (err error) {
	entryDir := filepath.Join(dir, hexID)
	if err := removeDebris(dir, hexID, true); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, hexID+".tmp-")
	if err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	defer func() {
		if err != nil {
			if rerr := removeTree(tmp); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	root := filepath.Join(tmp, "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	e, err := unpack(ctx, root)
	if err != nil {
		return fmt.Errorf("rootfs: unpacking %s: %w", image, err)
	}
	e.Image, e.ID, e.UnpackedAt, e.Format = image, "sha256:"+hexID, time.Now().UTC(), markerFormat
	if err := writeMarker(tmp, e); err != nil {
		return err
	}
	// One syncfs instead of an fsync per file: the marker must not outlive
	// a power cut that the files did not.
	if err := syncDir(tmp, true); err != nil {
		return err
	}
	if err := os.Rename(tmp, entryDir); err != nil {
		return fmt.Errorf("rootfs: moving the root into place: %w", err)
	}
	return syncDir(dir, false)
}

// Evict removes cached roots whose ID is not in keep ("sha256:<hex>" or
// "<hex>") and that no one holds a lease on, plus any debris of crashed
// unpacks. It returns the IDs of the roots it removed.
func (c *Cache) Evict(ctx context.Context, keep []string) ([]string, error) {
	if c.Dir == "" {
		return nil, errors.New("rootfs: no cache directory")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("rootfs: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rootfs: listing the cache: %w", err)
	}
	kept := map[string]bool{}
	for _, k := range keep {
		if h, err := idHex(k); err == nil {
			kept[h] = true
		}
	}
	var removed []string
	var errs []error
	for _, h := range cachedIDs(ents) {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		gone, err := evictOne(ctx, dir, h, kept[h])
		if err != nil {
			errs = append(errs, err...)
		}
		if gone {
			removed = append(removed, "sha256:"+h)
		}
	}
	return removed, errors.Join(errs...)
}

// cachedIDs are the image IDs the cache's entries are of (roots, their
// locks and debris), sorted.
func cachedIDs(ents []os.DirEntry) []string {
	found := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if i := strings.IndexByte(name, '.'); i >= 0 {
			name = name[:i]
		}
		if isHexID(name) {
			found[name] = true
		}
	}
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// evictOne removes root h's debris and, unless kept and complete, the
// root (and its lock, unless kept); a root someone holds a lease on is
// left alone. It says whether a root was removed.
func evictOne(ctx context.Context, dir, h string, kept bool) (bool, []error) {
	lockPath := filepath.Join(dir, h+".lock")
	f, err := lockFile(ctx, lockPath, unix.LOCK_EX, false)
	if errors.Is(err, errBusy) {
		return false, nil // leased, or being unpacked
	}
	if err != nil {
		return false, []error{err}
	}
	defer f.Close()
	var errs []error
	entryDir := filepath.Join(dir, h)
	_, merr := readMarker(entryDir, h)
	drop := !kept || merr != nil
	_, serr := os.Lstat(entryDir)
	gone := false
	if err := removeDebris(dir, h, drop); err != nil {
		errs = append(errs, err)
	} else if drop && serr == nil {
		gone = true
	}
	if !kept {
		// Safe while we hold it: lockFile retries when the file it
		// locked is no longer the one at the path.
		if err := os.Remove(lockPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return gone, errs
}

// removeDebris deletes hexID's temporary directories and, with entry, the
// entry itself (its marker first, so a crash midway leaves debris, never a
// "complete" partial root). The caller holds the exclusive lock.
func removeDebris(dir, hexID string, entry bool) error {
	tmps, _ := filepath.Glob(filepath.Join(dir, hexID+".tmp-*"))
	if entry {
		entryDir := filepath.Join(dir, hexID)
		if err := os.Remove(filepath.Join(entryDir, markerName)); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("rootfs: removing marker: %w", err)
		}
		tmps = append(tmps, entryDir)
	}
	for _, t := range tmps {
		if err := removeTree(t); err != nil {
			return err
		}
	}
	return nil
}

// prepare makes the cache directory and refuses one that another user
// could write: a root there could be altered under a sandbox.
func (c *Cache) prepare() (string, error) {
	if c.Dir == "" {
		return "", errors.New("rootfs: no cache directory")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return "", fmt.Errorf("rootfs: %w", err)
	}
	if err := hostfs.OwnedDir(dir); err != nil {
		return "", fmt.Errorf("rootfs: the cache: %w", err)
	}
	return dir, nil
}

func idHex(id string) (string, error) {
	h := strings.TrimPrefix(id, "sha256:")
	if !isHexID(h) {
		return "", fmt.Errorf("rootfs: %q is not an image ID (sha256:<64 hex digits>)", id)
	}
	return h, nil
}

func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

func readMarker(entryDir, hexID string) (Entry, error) {
	b, err := os.ReadFile(filepath.Join(entryDir, markerName))
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("rootfs: corrupt marker in %s: %w", entryDir, err)
	}
	if e.ID != "sha256:"+hexID {
		return Entry{}, fmt.Errorf("rootfs: marker in %s is for %s", entryDir, e.ID)
	}
	if e.Format != markerFormat {
		return Entry{}, fmt.Errorf("rootfs: %s was unpacked by an older version (format %d, now %d)", entryDir, e.Format, markerFormat)
	}
	if st, err := os.Lstat(filepath.Join(entryDir, "rootfs")); err != nil || !st.IsDir() {
		return Entry{}, fmt.Errorf("rootfs: %s has a marker but no root", entryDir)
	}
	return e, nil
}

func writeMarker(dir string, e Entry) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, markerName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("rootfs: writing marker: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rootfs: writing marker: %w", err)
	}
	return nil
}

// syncDir fsyncs dir, or with fs the whole filesystem holding it.
func syncDir(dir string, fs bool) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	defer f.Close()
	if fs {
		err = syncFS(int(f.Fd()))
	} else {
		err = f.Sync()
	}
	if err != nil {
		return fmt.Errorf("rootfs: syncing %s: %w", dir, err)
	}
	return nil
}

// removeTree removes path; without root it first makes directories
// writable, since images carry read-only ones (0555).
func removeTree(path string) error {
	if os.Geteuid() != 0 {
		_ = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700) // WalkDir lstat()s: d is never a symlink
			}
			return nil
		})
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("rootfs: removing %s: %w", path, err)
	}
	return nil
}

// lockFile takes the flock how (LOCK_SH or LOCK_EX) on path. It polls
// rather than blocks so ctx can end a wait; without wait it returns errBusy
// at once when the lock is held.
func lockFile(ctx context.Context, path string, how int, wait bool) (*os.File, error) {
	return lockFileWait(ctx, path, how, wait, nil)
}

// errDone: lockFileUnless stopped waiting because unless said so.
var errDone = errors.New("rootfs: no longer needed")

// lockFileUnless waits for the lock like lockFile, but gives up with
// errDone as soon as unless reports true.
func lockFileUnless(ctx context.Context, path string, how int, unless func() bool) (*os.File, error) {
	return lockFileWait(ctx, path, how, true, unless)
}

func lockFileWait(ctx context.Context, path string, how int, wait bool, unless func() bool) (*os.File, error) {
	delay := 5 * time.Millisecond
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("rootfs: opening lock: %w", err)
		}
		for {
			err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
			if err == unix.EINTR {
				continue
			}
			if err != unix.EWOULDBLOCK {
				break
			}
			if !wait {
				f.Close()
				return nil, errBusy
			}
			if unless != nil && unless() {
				f.Close()
				return nil, errDone
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, fmt.Errorf("rootfs: waiting for %s: %w", path, ctx.Err())
			case <-time.After(delay):
			}
			delay = min(2*delay, 100*time.Millisecond)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("rootfs: locking %s: %w", path, err)
		}
		// Evict unlinks lock files it holds: a lock won on an unlinked
		// inode guards nothing, so start over on the file now at path.
		var held, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Stat(path, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
			return f, nil
		}
		f.Close()
	}
}

// exportImage creates a container from id, never starts it, and unpacks
// its export into dst. Left-overs of a crashed earlier export of the same
// image on this host are removed first: the caller's exclusive lock means
// no live export of it exists.
func exportImage(ctx context.Context, cli *client.Client, id, dst string) (Entry, error) {
	hexID, _ := idHex(id)
	host, _ := os.Hostname()
	labels := map[string]string{
		profiles.LabelOwner: OwnerValue, LabelImage: hexID,
		profiles.LabelParentHost: host, profiles.LabelParentPID: strconv.Itoa(os.Getpid()),
	}
	removeCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	}
	remove := func(cid string) error {
		rctx, cancel := removeCtx()
		defer cancel()
		_, err := cli.ContainerRemove(rctx, cid, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("removing export container %.12s: %w", cid, err)
		}
		return nil
	}
	old, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label",
		profiles.LabelOwner+"="+OwnerValue, LabelImage+"="+hexID, profiles.LabelParentHost+"="+host)})
	if err != nil {
		return Entry{}, fmt.Errorf("listing earlier export containers: %w", err)
	}
	for _, c := range old.Items {
		if err := remove(c.ID); err != nil {
			return Entry{}, err
		}
	}
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: id,
			// Never started; a command is required only when the image has none.
			Entrypoint:      []string{"/.triage-sandbox-rootfs-export-never-runs"},
			NetworkDisabled: true,
			Labels:          labels,
		},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return Entry{}, fmt.Errorf("creating the export container: %w", err)
	}
	e, err := exportContainer(ctx, cli, created.ID, dst)
	if rerr := remove(created.ID); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return e, err
}

func exportContainer(ctx context.Context, cli *client.Client, cid, dst string) (Entry, error) {
	rc, err := cli.ContainerExport(ctx, cid, client.ContainerExportOptions{})
	if err != nil {
		return Entry{}, fmt.Errorf("exporting: %w", err)
	}
	defer rc.Close()
	rep := progress.From(ctx)
	defer rep.Done()
	counted := &progress.Counter{R: rc, Report: func(n int64) {
		rep.Step("unpacking the image root (first use of this image): %s", progress.Bytes(n))
	}}
	sum := &hashCounter{h: sha256.New()}
	r := io.TeeReader(bufio.NewReaderSize(counted, 1<<20), sum)
	stats, err := extractTar(ctx, r, dst)
	if err != nil {
		return Entry{}, err
	}
	// The digest covers the whole stream, end-of-archive padding included.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return Entry{}, fmt.Errorf("reading the export: %w", err)
	}
	return Entry{Source: "docker", SHA256: sum.digest(), Bytes: sum.n, Files: stats.Files + stats.Symlinks + stats.Hardlinks, Stats: stats}, nil
}

// hashCounter hashes and counts what is written to it.
type hashCounter struct {
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func (w *hashCounter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return w.h.Write(p)
}

func (w *hashCounter) digest() string { return "sha256:" + hex.EncodeToString(w.h.Sum(nil)) }
