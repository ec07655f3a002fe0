package rootfs

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Stats counts the entries an extraction wrote and skipped (an entry that
// replaces an earlier one of the same name counts again).
type Stats struct {
	Files     int `json:"files"`     // regular files
	Dirs      int `json:"dirs"`      // directories
	Symlinks  int `json:"symlinks"`  // symbolic links
	Hardlinks int `json:"hardlinks"` // hard links
	Skipped   int `json:"skipped"`   // devices, FIFOs, whiteouts in a flattened export, unknown types
}

// dockerEnv is the file Docker's init layer adds to every container.
const dockerEnv = ".dockerenv"

// whiteoutPrefix and opaqueWhiteout are the OCI layer deletion markers.
const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// extractor writes tar streams under a directory it owns. The directory
// must be fresh (created by the caller for this extraction): everything in
// it then came from the archive, which is what makes the hard-link rule
// ("only to a regular file already extracted") a plain lstat.
//
// It never resolves a path by string: every entry's parent is reached by
// openat(O_NOFOLLOW|O_DIRECTORY) one component at a time from the root's
// descriptor, so a symlink the archive planted (say etc -> /etc) makes a
// later entry through it fail with ELOOP/ENOTDIR instead of writing on the
// host. Entries never land outside the root: ".." components are refused,
// absolute names are taken relative to the root.
type extractor struct {
	root     int    // O_RDONLY|O_DIRECTORY descriptor of the target
	rootPath string // only to report errors and set the root's times
	chown    bool   // preserve uid/gid: only root may
	layers   bool   // an image layer: whiteouts delete; else they are skipped
	stats    Stats
	dirs     map[string]attrs // directory attributes, applied last
	written  map[string]bool  // paths the current layer created (opaque whiteouts keep them)

	// One cached parent descriptor: archives list a directory's entries
	// together, so most entries reuse the previous entry's parent.
	lastDir string
	lastFD  int
}

func newExtractor(dir string, layers bool) (*extractor, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening extraction target %s: %w", dir, err)
	}
	return &extractor{
		root: fd, rootPath: dir, chown: os.Geteuid() == 0, layers: layers,
		dirs: map[string]attrs{}, written: map[string]bool{}, lastFD: -1,
	}, nil
}

// close releases the descriptors; it does not apply directory attributes.
func (x *extractor) close() {
	x.dropCache()
	if x.root >= 0 {
		unix.Close(x.root)
		x.root = -1
	}
}

// extractTar unpacks one flattened tar stream (a container export) into
// dir, an empty directory created by the caller.
func extractTar(ctx context.Context, r io.Reader, dir string) (Stats, error) {
	x, err := newExtractor(dir, false)
	if err != nil {
		return Stats{}, err
	}
	defer x.close()
	if err := x.apply(ctx, r); err != nil {
		return x.stats, err
	}
	return x.stats, x.finish()
}

// apply unpacks one tar stream (the whole export, or one layer).
func (x *extractor) apply(ctx context.Context, r io.Reader) error {
	clear(x.written)
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading tar: %w", err)
		}
		if err := x.entry(hdr, tr); err != nil {
			return fmt.Errorf("tar entry %q: %w", hdr.Name, err)
		}
	}
}

// splitName turns an entry name into components below the root: ".." is
// refused outright (a legitimate image never needs it), "/" and "." are
// dropped, so "/etc/x" and "./etc/x" both mean etc/x.
func splitName(name string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return nil, errors.New("a '..' component would leave the root")
		}
		out = append(out, p)
	}
	return out, nil
}

func (x *extractor) entry(hdr *tar.Header, r io.Reader) error {
	parts, err := splitName(hdr.Name)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		if hdr.Typeflag == tar.TypeDir {
			x.dirs[""] = attrsOf(hdr) // the root's own mode, owner and times
			return nil
		}
		return errors.New("a non-directory entry names the root")
	}
	base := parts[len(parts)-1]
	if !x.layers && len(parts) == 1 && base == dockerEnv {
		// Docker's marker of its own containers: a container export has
		// it, the image does not, and a sandbox has no use for it.
		x.stats.Skipped++
		return nil
	}
	if strings.HasPrefix(base, whiteoutPrefix) {
		if !x.layers {
			x.stats.Skipped++ // an export is flattened: no whiteouts expected
			return nil
		}
		return x.whiteout(parts)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.mkdir(parts, hdr)
	case tar.TypeReg:
		return x.file(parts, hdr, r)
	case tar.TypeSymlink:
		return x.symlink(parts, hdr)
	case tar.TypeLink:
		return x.hardlink(parts, hdr)
	default:
		// Devices and FIFOs: runc builds /dev itself, and a device node in
		// an image is no business of a sandbox. Unknown types likewise.
		x.stats.Skipped++
		return nil
	}
}

// walk opens the directory parts names below the root, one component at a
// time, never following a symlink. With create, missing components are made
// (0755, owned by the extracting user), as tar producers may omit parents.
// The caller closes the returned descriptor.
func (x *extractor) walk(parts []string, create bool) (int, error) {
	fd, err := unix.Dup(x.root)
	if err != nil {
		return -1, err
	}
	for i, p := range parts {
		next, err := unix.Openat(fd, p, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && create {
			if err = unix.Mkdirat(fd, p, 0o755); err == nil || err == unix.EEXIST {
				next, err = unix.Openat(fd, p, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			at := strings.Join(parts[:i+1], "/")
			if err == unix.ELOOP || err == unix.ENOTDIR {
				return -1, fmt.Errorf("%s is a symlink or not a directory: refusing to write through it", at)
			}
			return -1, fmt.Errorf("opening %s: %w", at, err)
		}
		fd = next
	}
	return fd, nil
}

// parent returns the (cached) descriptor of parts' parent directory; the
// extractor owns it.
func (x *extractor) parent(parts []string) (int, error) {
	dir := strings.Join(parts[:len(parts)-1], "/")
	if x.lastFD >= 0 && x.lastDir == dir {
		return x.lastFD, nil
	}
	x.dropCache()
	fd, err := x.walk(parts[:len(parts)-1], true)
	if err != nil {
		return -1, err
	}
	x.lastDir, x.lastFD = dir, fd
	return fd, nil
}

func (x *extractor) dropCache() {
	if x.lastFD >= 0 {
		unix.Close(x.lastFD)
	}
	x.lastDir, x.lastFD = "", -1
}

// slot opens the parent of parts and clears the name there for a new
// non-directory entry.
func (x *extractor) slot(parts []string) (int, string, error) {
	dir, err := x.parent(parts)
	if err != nil {
		return -1, "", err
	}
	name := parts[len(parts)-1]
	if err := x.clearSlot(dir, name); err != nil {
		return -1, "", err
	}
	return dir, name, nil
}

// clearSlot removes whatever is at name in dir so a new entry can take its
// place (a later entry replaces an earlier one, as tar extraction does).
func (x *extractor) clearSlot(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	switch err {
	case nil, unix.ENOENT:
		return nil
	case unix.EISDIR:
		// The cached descriptor is name's parent, not inside name: it stays valid.
		return removeAllAt(dir, name)
	}
	return fmt.Errorf("replacing %s: %w", name, err)
}

func (x *extractor) mkdir(parts []string, hdr *tar.Header) error {
	dir, err := x.parent(parts)
	if err != nil {
		return err
	}
	name := parts[len(parts)-1]
	// 0700 while unpacking so an unprivileged extraction can still write
	// into a directory the image marks read-only; finish sets the real mode.
	err = unix.Mkdirat(dir, name, 0o700)
	if err == unix.EEXIST {
		var st unix.Stat_t
		if err = unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err = x.clearSlot(dir, name); err == nil {
				err = unix.Mkdirat(dir, name, 0o700)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("mkdir: %w", err)
	}
	key := strings.Join(parts, "/")
	x.dirs[key] = attrsOf(hdr)
	x.written[key] = true
	x.stats.Dirs++
	return nil
}

func (x *extractor) file(parts []string, hdr *tar.Header, r io.Reader) error {
	dir, name, err := x.slot(parts)
	if err != nil {
		return err
	}
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	n, err := io.Copy(f, r)
	if err == nil && n != hdr.Size {
		err = fmt.Errorf("wrote %d bytes, header says %d", n, hdr.Size)
	}
	if err == nil && x.chown {
		err = f.Chown(hdr.Uid, hdr.Gid) // before chmod: chown clears set-id bits
	}
	if err == nil {
		err = unix.Fchmod(fd, uint32(hdr.Mode&0o7777))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	x.written[strings.Join(parts, "/")] = true
	x.stats.Files++
	return setTimes(dir, name, attrsOf(hdr))
}

func (x *extractor) symlink(parts []string, hdr *tar.Header) error {
	dir, name, err := x.slot(parts)
	if err != nil {
		return err
	}
	// The target is kept verbatim: nothing here ever follows it, and runc
	// resolves it inside the container's root.
	if err := unix.Symlinkat(hdr.Linkname, dir, name); err != nil {
		return fmt.Errorf("symlink: %w", err)
	}
	if x.chown {
		if err := unix.Fchownat(dir, name, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("lchown: %w", err)
		}
	}
	x.written[strings.Join(parts, "/")] = true
	x.stats.Symlinks++
	return setTimes(dir, name, attrsOf(hdr))
}

func (x *extractor) hardlink(parts []string, hdr *tar.Header) error {
	target, err := splitName(hdr.Linkname)
	if err != nil {
		return fmt.Errorf("hard link target %q: %w", hdr.Linkname, err)
	}
	if len(target) == 0 {
		return fmt.Errorf("hard link target %q names the root", hdr.Linkname)
	}
	if strings.Join(target, "/") == strings.Join(parts, "/") {
		return errors.New("hard link to itself")
	}
	tdir, err := x.walk(target[:len(target)-1], false)
	if err != nil {
		return fmt.Errorf("hard link target %q: %w", hdr.Linkname, err)
	}
	defer unix.Close(tdir)
	tname := target[len(target)-1]
	var st unix.Stat_t
	if err := unix.Fstatat(tdir, tname, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("hard link target %q: %w", hdr.Linkname, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("hard link target %q is not a regular file extracted earlier", hdr.Linkname)
	}
	dir, name, err := x.slot(parts)
	if err != nil {
		return err
	}
	// linkat without AT_SYMLINK_FOLLOW links the name itself, and the
	// lstat above made sure that is a regular file.
	if err := unix.Linkat(tdir, tname, dir, name, 0); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	x.written[strings.Join(parts, "/")] = true
	x.stats.Hardlinks++
	return nil
}

// whiteout applies an OCI layer deletion marker: ".wh.NAME" deletes NAME
// from the layers below, ".wh..wh..opq" empties its directory of what the
// layers below put there.
func (x *extractor) whiteout(parts []string) error {
	base := parts[len(parts)-1]
	dirParts := parts[:len(parts)-1]
	if base == opaqueWhiteout {
		dir, err := x.walk(dirParts, true)
		if err != nil {
			return err
		}
		defer unix.Close(dir)
		names, err := readDirNames(dir)
		if err != nil {
			return err
		}
		prefix := strings.Join(dirParts, "/")
		for _, n := range names {
			p := n
			if prefix != "" {
				p = prefix + "/" + n
			}
			if x.written[p] {
				continue
			}
			x.dropCache()
			if err := removeAllAt(dir, n); err != nil {
				return err
			}
		}
		return nil
	}
	victim := strings.TrimPrefix(base, whiteoutPrefix)
	if victim == "" || victim == "." || victim == ".." {
		return fmt.Errorf("malformed whiteout %q", base)
	}
	dir, err := x.walk(dirParts, false)
	if err == nil {
		defer unix.Close(dir)
		x.dropCache()
		err = removeAllAt(dir, victim)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil // nothing below to hide
	}
	return err
}

// finish applies directories' owners, modes and times, deepest first: a
// directory's time must be set after its last child is written, and an
// unprivileged extraction needs write access until then.
func (x *extractor) finish() error {
	x.dropCache()
	paths := make([]string, 0, len(x.dirs))
	for p := range x.dirs {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		di, dj := strings.Count(paths[i], "/"), strings.Count(paths[j], "/")
		if paths[i] == "" || paths[j] == "" {
			return paths[j] == "" && paths[i] != ""
		}
		if di != dj {
			return di > dj
		}
		return paths[i] < paths[j]
	})
	for _, p := range paths {
		if err := x.dirAttrs(p, x.dirs[p]); err != nil {
			return fmt.Errorf("directory %q: %w", p, err)
		}
	}
	return nil
}

// attrs is what finish needs of a directory's header.
type attrs struct {
	uid, gid     int
	mode         uint32
	atime, mtime time.Time
}

func attrsOf(hdr *tar.Header) attrs {
	return attrs{uid: hdr.Uid, gid: hdr.Gid, mode: uint32(hdr.Mode & 0o7777), atime: hdr.AccessTime, mtime: hdr.ModTime}
}

func (x *extractor) dirAttrs(p string, a attrs) error {
	var dir, fd int
	var name string
	if p == "" {
		dir, name = -1, ""
		var err error
		if fd, err = unix.Dup(x.root); err != nil {
			return err
		}
	} else {
		parts := strings.Split(p, "/")
		var err error
		dir, err = x.walk(parts[:len(parts)-1], false)
		if err != nil {
			return nil // replaced by a later entry: nothing to apply
		}
		defer unix.Close(dir)
		name = parts[len(parts)-1]
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
			return nil
		}
		if err != nil {
			return err
		}
	}
	defer unix.Close(fd)
	if x.chown {
		if err := unix.Fchown(fd, a.uid, a.gid); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
	}
	if err := unix.Fchmod(fd, a.mode); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if p == "" {
		return unix.UtimesNano(x.rootPath, a.times())
	}
	return setTimes(dir, name, a)
}

func (a attrs) times() []unix.Timespec {
	atime := a.atime
	if atime.IsZero() {
		atime = a.mtime
	}
	return []unix.Timespec{timespec(atime), timespec(a.mtime)}
}

func timespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return unix.NsecToTimespec(t.UnixNano())
}

func setTimes(dir int, name string, a attrs) error {
	if err := unix.UtimesNanoAt(dir, name, a.times(), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("setting times: %w", err)
	}
	return nil
}

// removeAllAt deletes name in dir and, if it is a directory, everything
// below it, without following any symlink.
func removeAllAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err != unix.EISDIR && err != unix.EPERM {
		if err != nil {
			return fmt.Errorf("removing %s: %w", name, err)
		}
		return nil
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", name, err)
	}
	names, err := readDirNames(fd)
	if err == nil {
		for _, n := range names {
			if err = removeAllAt(fd, n); err != nil {
				break
			}
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("removing %s: %w", name, err)
	}
	return nil
}

// readDirNames lists dir without consuming the caller's descriptor.
func readDirNames(dir int) ([]string, error) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}
