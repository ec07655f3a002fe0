//go:build unix

package stage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
)

// Bounds of one copy, either way.
const (
	maxDepth          = 64
	defaultMaxEntries = 200000
)

// Pack writes the staged paths as a tar stream to w and returns what it
// sent. It reads the host by descriptor and sends only what the sandbox
// identity could read there: regular files, directories and symlinks;
// FIFOs, sockets and devices never enter the sandbox (a host daemon's
// socket in a writable directory stays unreachable).
func Pack(ctx context.Context, w io.Writer, spec Spec) (Manifest, error) {
	p := &packer{ctx: ctx, tw: tar.NewWriter(w), spec: spec, m: Manifest{}}
	if p.spec.MaxEntries == 0 {
		p.spec.MaxEntries = defaultMaxEntries
	}
	for _, sp := range spec.Paths {
		if err := p.root(sp); err != nil {
			return nil, err
		}
	}
	if err := p.tw.Close(); err != nil {
		return nil, fmt.Errorf("staging the writable paths: %w", err)
	}
	return p.m, nil
}

type packer struct {
	ctx   context.Context
	tw    *tar.Writer
	spec  Spec
	m     Manifest
	count int
}

func (p *packer) root(sp Path) error {
	dir, name := filepath.Split(filepath.Clean(sp.Path))
	dfd, err := hostfs.OpenDirBeneath("/", dir, false)
	if err != nil {
		return fmt.Errorf("staging %s: %w", sp.Path, err)
	}
	defer unix.Close(dfd)
	if sp.Kind == KindDir {
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("staging %s: %w", sp.Path, err)
		}
		defer unix.Close(fd)
		return p.dir(fd, filepath.Clean(sp.Path), 0)
	}
	return p.entry(dfd, name, filepath.Clean(sp.Path), 0)
}

func (p *packer) dir(fd int, abs string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("staging %s: deeper than %d levels", abs, maxDepth)
	}
	names, err := hostfs.ReadDirNames(fd)
	if err != nil {
		return fmt.Errorf("staging %s: %w", abs, err)
	}
	for _, n := range names {
		if err := p.entry(fd, n, filepath.Join(abs, n), depth); err != nil {
			return err
		}
	}
	return nil
}

func (p *packer) entry(dfd int, name, abs string, depth int) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	if skipped(tarName(abs), p.spec.Skip) {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("staging %s: %w", abs, err)
	}
	if p.count++; p.count > p.spec.MaxEntries {
		return fmt.Errorf("staging: more than %d entries under the writable paths; clean them up", p.spec.MaxEntries)
	}
	hdr := &tar.Header{Name: tarName(abs), Mode: int64(st.Mode & 0o777), ModTime: time.Unix(st.Mtim.Unix()).UTC(), Format: tar.FormatPAX}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		if !p.may(&st, 0o5) {
			p.m[hdr.Name] = State{Type: typeHidden}
			return nil
		}
		hdr.Typeflag = tar.TypeDir
		if err := p.write(hdr, nil); err != nil {
			return err
		}
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("staging %s: %w", abs, err)
		}
		defer unix.Close(fd)
		return p.dir(fd, abs, depth+1)
	case unix.S_IFLNK:
		target, err := hostfs.Readlinkat(dfd, name)
		if err != nil {
			return fmt.Errorf("staging %s: %w", abs, err)
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		return p.write(hdr, nil)
	case unix.S_IFREG:
		if !p.may(&st, 0o4) {
			p.m[hdr.Name] = State{Type: typeHidden}
			return nil
		}
		return p.file(dfd, name, abs, hdr)
	}
	return nil // FIFOs, sockets and devices never enter the sandbox
}

func (p *packer) file(dfd int, name, abs string, hdr *tar.Header) error {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("staging %s: %w", abs, err)
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("staging %s: it changed while being copied; run again", abs)
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size
	hdr.ModTime = time.Unix(st.Mtim.Unix()).UTC()
	return p.write(hdr, f)
}

func (p *packer) write(hdr *tar.Header, body io.Reader) error {
	if err := p.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("staging %s: %w", hdr.Name, err)
	}
	if body != nil {
		if n, err := io.CopyN(p.tw, body, hdr.Size); err != nil {
			return fmt.Errorf("staging /%s: %w (copied %d of %d bytes; it changed while being copied?)", hdr.Name, err, n, hdr.Size)
		}
	}
	p.m[hdr.Name] = State{Type: hdr.Typeflag, Size: hdr.Size, Mode: hdr.Mode, MTime: hdr.ModTime, Link: hdr.Linkname}
	return nil
}

// may reports whether the sandbox identity has the permission bits want
// (r=4, x=1) on the file by its mode: what it could not read on the host
// it does not get a copy of.
func (p *packer) may(st *unix.Stat_t, want uint32) bool {
	mode := uint32(st.Mode) & 0o777
	switch {
	case int(st.Uid) == p.spec.UID:
		return (mode>>6)&want == want
	case int(st.Gid) == p.spec.GID:
		return (mode>>3)&want == want
	}
	return mode&want == want
}
