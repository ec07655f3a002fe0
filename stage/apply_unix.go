//go:build unix

package stage

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
)

// Apply reads an Export stream and brings the host's staged paths up to
// it, relative to m (what was copied in). Per name:
//   - unchanged since the copy: nothing;
//   - changed or new in the sandbox and untouched on the host: written
//     (regular files and symlinks; directories created), set-id bits
//     dropped, owned by the caller;
//   - gone in the sandbox and untouched on the host: deleted;
//   - changed on the host meanwhile: the host's version stays (conflict);
//   - FIFOs, sockets, devices, unreadable paths, a file-staged path that
//     is no longer a regular file: not copied (dropped).
//
// It returns the new manifest (for the next command) with the report.
func Apply(ctx context.Context, r io.Reader, m Manifest, spec Spec) (Manifest, Report, error) {
	start := time.Now()
	a := &applier{spec: spec, old: m, now: Manifest{}, seen: map[string]bool{}, perPath: map[string]int{}}
	if a.spec.MaxEntries == 0 {
		a.spec.MaxEntries = defaultMaxEntries
	}
	err := a.read(ctx, tar.NewReader(r))
	if err == nil {
		a.deleteGone()
	}
	a.rep.Duration = time.Since(start)
	if err != nil {
		// What was not seen stays as the host has it; the next copy-back
		// compares against the old state for those names.
		for name, st := range m {
			if _, ok := a.now[name]; !ok {
				a.now[name] = st
			}
		}
		return a.now, a.rep, fmt.Errorf("copying the outputs back: %w", err)
	}
	return a.now, a.rep, nil
}

type applier struct {
	// complete: the end entry was read.
	complete bool
	spec     Spec
	old      Manifest
	now      Manifest
	seen     map[string]bool
	// perPath counts the entries under each staged path.
	perPath map[string]int
	rep     Report
}

func (a *applier) read(ctx context.Context, tr *tar.Reader) error {
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if !a.complete {
				return errors.New("the sandbox's export ended early (no end entry); nothing it lacks was deleted")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the sandbox's export: %w", err)
		}
		if a.complete {
			return errors.New("the sandbox's export goes on past its end entry")
		}
		if hdr.Typeflag == typeEnd && hdr.Name == endName {
			a.complete = true
			continue
		}
		if hdr.Typeflag == typeOver && hdr.Name == overName {
			return fmt.Errorf("the sandbox's %s holds more than %s entries, past its bound (the sandbox's own filesystem does not enforce it); nothing was copied back",
				hdr.Linkname, hdr.PAXRecords["TRIAGE_SANDBOX.max"])
		}
		if n >= a.spec.MaxEntries {
			return fmt.Errorf("the sandbox exported more than %d entries", a.spec.MaxEntries)
		}
		if a.rep.Bytes += hdr.Size; a.spec.MaxBytes > 0 && a.rep.Bytes > a.spec.MaxBytes {
			return fmt.Errorf("the sandbox exported more than %d bytes, past its bound", a.spec.MaxBytes)
		}
		if err := a.entry(hdr, tr); err != nil {
			return err
		}
	}
}

func (a *applier) drop(name, why string) {
	a.rep.Changes = append(a.rep.Changes, Change{Path: "/" + name, Action: "dropped", Detail: why})
}

func (a *applier) conflict(name, why string) {
	a.rep.Changes = append(a.rep.Changes, Change{Path: "/" + name, Action: "conflict", Detail: why})
}

func (a *applier) entry(hdr *tar.Header, body io.Reader) error {
	name, root, ok, err := a.admit(hdr)
	if !ok || err != nil {
		return err
	}
	a.seen[name] = true
	if a.refused(name, root, hdr) {
		return a.keepOld(name)
	}
	if hdr.Mode&0o6000 != 0 {
		a.drop(name, "set-id bits dropped")
	}
	want := State{Type: hdr.Typeflag, Size: hdr.Size, Mode: hdr.Mode & 0o777, MTime: hdr.ModTime, Link: hdr.Linkname}
	old, had := a.old[name]
	if had && sameState(old, want) {
		a.now[name] = old
		return nil
	}
	dir, base := path.Split(name)
	dfd, err := hostfs.OpenDirBeneath("/", dir, false)
	if err != nil {
		a.conflict(name, "its directory on the host is gone or not a directory: "+err.Error())
		return nil
	}
	defer unix.Close(dfd)
	cur, exists, err := lstatAt(dfd, base)
	if err != nil {
		return fmt.Errorf("/%s: %w", name, err)
	}
	if a.changedOnHost(name, want, old, had, cur, exists) {
		if hdr.Typeflag == tar.TypeReg {
			a.keepBeside(dfd, base, name, keptMode(hdr.Mode, cur, exists), hdr, body)
		}
		return nil
	}
	if err := a.write(dfd, base, name, hdr, body, exists, cur); err != nil {
		return err
	}
	if st, ok, err := lstatAt(dfd, base); err == nil && ok {
		a.now[name] = st
	}
	return nil
}

// admit checks an entry's name against the staged paths and their bounds.
// ok is false for an entry that is not to be copied (a discarded one in a
// skeleton, an unreadable path), err set for one that must end the copy.
func (a *applier) admit(hdr *tar.Header) (name string, root Path, ok bool, err error) {
	name, ok = cleanName(hdr.Name)
	if !ok {
		return "", Path{}, false, fmt.Errorf("the sandbox's export has a bad name %q", hdr.Name)
	}
	root, ok = rootOf(name, a.spec.Paths)
	if !ok || (root.Kind == KindDir && name == tarName(root.Path)) {
		return "", Path{}, false, fmt.Errorf("the sandbox's export names %q, outside the staged paths", hdr.Name)
	}
	if a.perPath[root.Path]++; a.spec.MaxEntriesPerPath > 0 && a.perPath[root.Path] > a.spec.MaxEntriesPerPath {
		return "", Path{}, false, fmt.Errorf("the sandbox exported more than %d entries under %s, past its bound", a.spec.MaxEntriesPerPath, root.Path)
	}
	if root.Kind == KindSkeleton {
		if hdr.Typeflag != typeDiscarded {
			return "", Path{}, false, fmt.Errorf("the sandbox's export names %q, outside the writable paths", hdr.Name)
		}
		a.rep.Discarded = append(a.rep.Discarded, "/"+name)
		return "", Path{}, false, nil
	}
	if skipped(name, a.spec.Skip) {
		a.drop(name, "an unreadable path is never written from the sandbox")
		return "", Path{}, false, nil
	}
	if a.old.hiddenAt(name) {
		a.drop(name, "not readable by the sandbox on the host, so not writable from it")
		return "", Path{}, false, nil
	}
	return name, root, true, nil
}

// refused reports (and records as dropped) an entry of a type that is not
// copied to the host: anything but a regular file, a directory or a
// symlink, and anything but a regular file for a file-staged path.
func (a *applier) refused(name string, root Path, hdr *tar.Header) bool {
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink:
	case tar.TypeFifo:
		a.drop(name, "a FIFO is not copied to the host")
		return true
	case tar.TypeChar, tar.TypeBlock:
		a.drop(name, "a device is not copied to the host")
		return true
	default:
		a.drop(name, "a socket is not copied to the host")
		return true
	}
	if root.Kind == KindFile && hdr.Typeflag != tar.TypeReg {
		a.drop(name, "a writable file must stay a regular file; the host's copy is unchanged")
		return true
	}
	return false
}

// changedOnHost reports (and records as a conflict) a name the host
// changed since the copy in: then the host's version stays. The next
// manifest holds the sandbox's version (want): a sandbox that outlives
// the command (a session's) still has it at the next copy-back, which
// is then no change and no second conflict; an edit of it is a new
// conflict, since the sandbox never saw the host's version.
func (a *applier) changedOnHost(name string, want, old State, had bool, cur State, exists bool) bool {
	switch {
	case had && !exists && old.Type != tar.TypeDir:
		a.conflict(name, "deleted on the host meanwhile; the sandbox's version is not written")
	case had && exists && !sameState(old, cur):
		a.conflict(name, "changed on the host meanwhile; the host's version stays")
	case !had && exists && !(cur.Type == tar.TypeDir && want.Type == tar.TypeDir):
		a.conflict(name, "created on the host meanwhile (or not readable by the sandbox); the host's version stays")
	default:
		return false
	}
	a.now[name] = want
	return true
}

// keptMode is a kept conflict copy's mode: the owner may read and write
// it; group and others may read it only when both the host's version and
// the sandbox's let them; nobody may write or execute it but the owner.
// The sandbox chooses its own file's mode, so it alone must never widen
// the copy (a 0666 file would leave a world-writable one on the host).
func keptMode(sandbox int64, cur State, exists bool) uint32 {
	if !exists || cur.Type != tar.TypeReg {
		return 0o600
	}
	return 0o600 | uint32(sandbox&cur.Mode&0o044)
}

// keepBeside keeps the sandbox's version of a regular file the host
// changed meanwhile, so neither edit is lost: under a new name of our own
// beside it (created exclusively, mode as keptMode says), recorded in the
// conflict. A file it cannot write is said in the conflict's detail.
func (a *applier) keepBeside(dfd int, base, name string, mode uint32, hdr *tar.Header, body io.Reader) {
	c := &a.rep.Changes[len(a.rep.Changes)-1]
	kept := base + ".from-sandbox-" + time.Now().UTC().Format("20060102T150405") + "-" + randomHex(3)
	fd, err := unix.Openat(dfd, kept, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		c.Detail += "; the sandbox's version could not be kept: " + err.Error()
		return
	}
	f := newFile(fd, name)
	_, cerr := io.CopyN(f, body, hdr.Size)
	if cerr == nil && a.spec.Chown {
		cerr = unix.Fchown(fd, a.spec.UID, a.spec.GID)
	}
	if cerr == nil {
		cerr = unix.Fchmod(fd, mode)
	}
	if err := f.Close(); cerr == nil {
		cerr = err
	}
	if cerr != nil {
		_ = unix.Unlinkat(dfd, kept, 0)
		c.Detail += "; the sandbox's version could not be kept: " + cerr.Error()
		return
	}
	dir, _ := path.Split(name)
	c.KeptAs = "/" + dir + kept
	c.Detail += "; the sandbox's version is kept beside it"
	a.rep.Written++
}

// keepOld keeps a name's old state so that a dropped entry is not taken
// for a deletion.
func (a *applier) keepOld(name string) error {
	if st, ok := a.old[name]; ok {
		a.now[name] = st
	}
	return nil
}

func (a *applier) write(dfd int, base, name string, hdr *tar.Header, body io.Reader, exists bool, cur State) error {
	mode := uint32(hdr.Mode & 0o777)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if exists && cur.Type == tar.TypeDir {
			return nil
		}
		if exists {
			if err := removeAt(dfd, base, cur); err != nil {
				a.conflict(name, "cannot replace it with a directory: "+err.Error())
				return nil
			}
		}
		if err := unix.Mkdirat(dfd, base, mode|0o700); err != nil {
			return fmt.Errorf("creating /%s: %w", name, err)
		}
		if a.spec.Chown {
			if err := unix.Fchownat(dfd, base, a.spec.UID, a.spec.GID, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("creating /%s: %w", name, err)
			}
		}
		a.rep.Written++
		return nil
	case tar.TypeSymlink:
		tmp := tempName(base)
		if err := unix.Symlinkat(hdr.Linkname, dfd, tmp); err != nil {
			return fmt.Errorf("creating /%s: %w", name, err)
		}
		if a.spec.Chown {
			if err := unix.Fchownat(dfd, tmp, a.spec.UID, a.spec.GID, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				_ = unix.Unlinkat(dfd, tmp, 0)
				return fmt.Errorf("creating /%s: %w", name, err)
			}
		}
		return a.replace(dfd, tmp, base, name, exists, cur)
	}
	tmp := tempName(base)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("writing /%s: %w", name, err)
	}
	f := newFile(fd, name)
	_, cerr := io.CopyN(f, body, hdr.Size)
	if cerr == nil && a.spec.Chown {
		cerr = unix.Fchown(fd, a.spec.UID, a.spec.GID)
	}
	if cerr == nil {
		cerr = unix.Fchmod(fd, mode)
	}
	if cerr == nil {
		ts := []unix.Timespec{unix.NsecToTimespec(hdr.ModTime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
		cerr = unix.UtimesNanoAt(dfd, tmp, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err := f.Close(); cerr == nil {
		cerr = err
	}
	if cerr != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("writing /%s: %w", name, cerr)
	}
	return a.replace(dfd, tmp, base, name, exists, cur)
}

// replace renames tmp over base; a directory in the way is removed only
// when empty.
func (a *applier) replace(dfd int, tmp, base, name string, exists bool, cur State) error {
	if exists && cur.Type == tar.TypeDir {
		if err := unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR); err != nil {
			_ = unix.Unlinkat(dfd, tmp, 0)
			a.conflict(name, "a directory on the host is in the way: "+err.Error())
			return nil
		}
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("writing /%s: %w", name, err)
	}
	a.rep.Written++
	return nil
}

// deleteGone removes what the sandbox deleted, files before their
// directories, each only if the host still has what was copied in.
func (a *applier) deleteGone() {
	var gone []string
	for name, st := range a.old {
		if st.Type == typeHidden {
			a.now[name] = st
			continue
		}
		if !a.seen[name] {
			gone = append(gone, name)
		}
	}
	// Deepest first, so a directory is emptied before it is removed.
	sort.Slice(gone, func(i, j int) bool {
		if di, dj := strings.Count(gone[i], "/"), strings.Count(gone[j], "/"); di != dj {
			return di > dj
		}
		return gone[i] < gone[j]
	})
	for _, name := range gone {
		old := a.old[name]
		root, ok := rootOf(name, a.spec.Paths)
		if !ok || root.Kind == KindSkeleton {
			// Copied in only (a symlink in a skeleton): never written back.
			a.now[name] = old
			continue
		}
		if root.Kind == KindFile {
			// A writable file the sandbox removed (or renamed away) keeps
			// the host's copy: only rename-based edits are carried back.
			a.now[name] = old
			continue
		}
		dir, base := path.Split(name)
		dfd, err := hostfs.OpenDirBeneath("/", dir, false)
		if err != nil {
			continue // its directory went already
		}
		cur, exists, err := lstatAt(dfd, base)
		switch {
		case err != nil || !exists:
		case !sameState(old, cur):
			a.conflict(name, "deleted in the sandbox but changed on the host meanwhile; kept")
		default:
			if err := removeAt(dfd, base, cur); err != nil {
				a.conflict(name, "deleted in the sandbox, not on the host: "+err.Error())
				a.now[name] = old
			} else {
				a.rep.Deleted++
			}
		}
		unix.Close(dfd)
	}
	a.rep.Changes = slices.Clip(a.rep.Changes)
}

func removeAt(dfd int, base string, cur State) error {
	if cur.Type == tar.TypeDir {
		return unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR)
	}
	return unix.Unlinkat(dfd, base, 0)
}

// sameState compares what matters for "unchanged": type, size, mode and
// mtime (to the nanosecond) of a file. Directories compare by type alone
// (their mtime moves with every entry), symlinks by their target: a link's
// mode is always 0777 on Linux, its size is its target's length (which
// pack and lstat record differently), and an unpack cannot keep its mtime,
// so any of those would make every link a change on every copy-back.
func sameState(a, b State) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case tar.TypeDir:
		return true
	case tar.TypeSymlink:
		return a.Link == b.Link
	}
	return a.Size == b.Size && a.Mode == b.Mode && a.MTime.Equal(b.MTime) && a.Link == b.Link
}

func lstatAt(dfd int, base string) (State, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return State{}, false, nil
		}
		return State{}, false, err
	}
	s := State{Size: st.Size, Mode: int64(st.Mode & 0o777), MTime: time.Unix(st.Mtim.Unix()).UTC()}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
		s.Type = tar.TypeReg
	case unix.S_IFDIR:
		s.Type, s.Size = tar.TypeDir, 0
	case unix.S_IFLNK:
		s.Type = tar.TypeSymlink
		s.Link, _ = hostfs.Readlinkat(dfd, base)
	case unix.S_IFIFO:
		s.Type = tar.TypeFifo
	default:
		s.Type = typeOther
	}
	return s, true, nil
}

func tempName(base string) string {
	return "." + base + ".triage-sandbox-" + randomHex(6)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
