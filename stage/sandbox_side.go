package stage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// What runs inside the sandbox, as the sandbox identity, before any
// command (Unpack) and after each one (Export).

// Unpack extracts a Pack stream into the staged paths. Every entry must lie
// within one of them; nothing is created through a symlink; set-id bits are
// never set. It stops at the end of the archive, so r may go on being read
// afterwards (the holder's lifeline follows the archive on its stdin).
func Unpack(r io.Reader, paths []Path) error {
	tr := tar.NewReader(r)
	type dirMode struct {
		path  string
		mode  fs.FileMode
		mtime time.Time
	}
	var dirs []dirMode
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the staged copy: %w", err)
		}
		name, ok := cleanName(hdr.Name)
		if !ok {
			return fmt.Errorf("staged copy: bad name %q", hdr.Name)
		}
		if _, ok := rootOf(name, paths); !ok {
			return fmt.Errorf("staged copy: %q is outside the staged paths", hdr.Name)
		}
		abs := "/" + name
		if err := parentIsDir(abs, paths); err != nil {
			return err
		}
		mode := fs.FileMode(hdr.Mode) & fs.ModePerm
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(abs, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("staging %s: %w", abs, err)
			}
			dirs = append(dirs, dirMode{abs, mode, hdr.ModTime})
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, abs); err != nil {
				return fmt.Errorf("staging %s: %w", abs, err)
			}
		case tar.TypeReg:
			if err := writeNew(abs, tr, mode, hdr.ModTime); err != nil {
				return err
			}
		default:
			return fmt.Errorf("staged copy: %s has an unexpected type %q", abs, hdr.Typeflag)
		}
	}
	// Modes last and deepest first: a read-only directory still gets its
	// contents.
	for _, d := range slices.Backward(dirs) {
		if err := os.Chmod(d.path, d.mode); err != nil {
			return fmt.Errorf("staging %s: %w", d.path, err)
		}
		_ = os.Chtimes(d.path, d.mtime, d.mtime)
	}
	return nil
}

// parentIsDir refuses an entry whose parent is not a real directory (a
// symlink made by an earlier entry), unless the parent is a staged path's
// own parent (a file-staged path lives in its directory).
func parentIsDir(abs string, paths []Path) error {
	parent := filepath.Dir(abs)
	for _, p := range paths {
		if p.Kind != KindDir && filepath.Clean(p.Path) == abs {
			return nil
		}
	}
	fi, err := os.Lstat(parent)
	if err != nil {
		return fmt.Errorf("staging %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("staging %s: its parent is not a directory", abs)
	}
	return nil
}

func writeNew(abs string, r io.Reader, mode fs.FileMode, mtime time.Time) error {
	if fi, err := os.Lstat(abs); err == nil && fi.Mode().IsRegular() {
		// A file-staged path's mount point: runc made it empty; replace it.
		if err := os.Remove(abs); err != nil {
			return fmt.Errorf("staging %s: %w", abs, err)
		}
	}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("staging %s: %w", abs, err)
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("staging %s: %w", abs, err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("staging %s: %w", abs, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("staging %s: %w", abs, err)
	}
	return os.Chtimes(abs, mtime, mtime)
}

// Export writes the staged paths' current contents as a tar stream. It
// never follows a symlink; FIFOs, sockets and devices are sent as their
// type alone so the host can report them.
func Export(w io.Writer, paths []Path) error { return ExportBounded(w, paths, 0) }

// ExportBounded is Export that first counts each staged directory: one
// past maxEntries (when > 0) is not exported at all, and the export says
// so. The host enforces the same bound on what it reads; this only spares
// it a copy back it would refuse part way (where the sandbox's own
// filesystem, gVisor's tmpfs, has no inode bound).
func ExportBounded(w io.Writer, paths []Path, maxEntries int) error {
	tw := tar.NewWriter(w)
	if maxEntries > 0 {
		for _, p := range paths {
			if p.Kind != KindDir {
				continue
			}
			if n := countEntries(filepath.Clean(p.Path), maxEntries+1); n > maxEntries {
				hdr := &tar.Header{Name: overName, Typeflag: typeOver, Linkname: p.Path, Size: 0, Format: tar.FormatPAX,
					PAXRecords: map[string]string{"TRIAGE_SANDBOX.max": strconv.Itoa(maxEntries)}}
				if err := tw.WriteHeader(hdr); err != nil {
					return err
				}
				return tw.Close()
			}
		}
	}
	for _, p := range paths {
		root := filepath.Clean(p.Path)
		if p.Kind == KindLink {
			continue
		}
		if p.Kind == KindSkeleton {
			if err := exportDiscarded(tw, root, paths); err != nil {
				return fmt.Errorf("exporting %s: %w", root, err)
			}
			continue
		}
		if p.Kind == KindFile {
			if err := exportEntry(tw, root); err != nil {
				return err
			}
			continue
		}
		err := filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if abs == root {
				return nil
			}
			return exportEntry(tw, abs)
		})
		if err != nil {
			return fmt.Errorf("exporting %s: %w", root, err)
		}
	}
	// The last entry says the export is whole: a stream that ends without
	// it (the exporter died, a pipe closed early) must not be read as
	// "everything else was deleted".
	if err := tw.WriteHeader(&tar.Header{Name: endName, Typeflag: typeEnd, Format: tar.FormatPAX}); err != nil {
		return err
	}
	return tw.Close()
}

// countEntries counts the entries below root, stopping at limit.
func countEntries(root string, limit int) int {
	n := 0
	_ = filepath.WalkDir(root, func(abs string, _ fs.DirEntry, err error) error {
		if err != nil || abs == root {
			return nil
		}
		if n++; n >= limit {
			return fs.SkipAll
		}
		return nil
	})
	return n
}

func exportEntry(tw *tar.Writer, abs string) error {
	fi, err := os.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: tarName(abs), Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime().UTC(), Format: tar.FormatPAX}
	if fi.Mode()&fs.ModeSetuid != 0 {
		hdr.Mode |= 0o4000
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		hdr.Mode |= 0o2000
	}
	switch t := fi.Mode().Type(); {
	case t == 0:
		f, err := os.OpenFile(abs, os.O_RDONLY|oNoFollow|oNonBlock, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("%s changed while being exported", abs)
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = io.CopyN(tw, f, hdr.Size)
		return err
	case t == fs.ModeDir:
		hdr.Typeflag = tar.TypeDir
	case t == fs.ModeSymlink:
		target, err := os.Readlink(abs)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
	case t == fs.ModeNamedPipe:
		hdr.Typeflag = tar.TypeFifo
	case t&fs.ModeDevice != 0:
		hdr.Typeflag = tar.TypeChar
	default: // sockets and the rest: reported as such, never created
		hdr.Typeflag = typeOther
	}
	return tw.WriteHeader(hdr)
}

// typeOther marks a socket (or anything else tar has no type for).
const typeOther byte = 'S'

// exportDiscarded names the entries written in a skeleton directory that
// are neither staged paths nor the mount points of its read-only entries
// (those are on another device).
func exportDiscarded(tw *tar.Writer, root string, paths []Path) error {
	var rootSt syscall.Stat_t
	if err := syscall.Lstat(root, &rootSt); err != nil {
		return err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		abs := filepath.Join(root, e.Name())
		if slices.ContainsFunc(paths, func(p Path) bool { return filepath.Clean(p.Path) == abs }) {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(abs, &st); err != nil || st.Dev != rootSt.Dev {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: tarName(abs), Typeflag: typeDiscarded, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	return nil
}
