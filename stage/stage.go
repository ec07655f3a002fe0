// Package stage keeps a sandbox's writes off the host while they happen.
// A staged writable path is a bounded filesystem inside the sandbox (a
// tmpfs with a size and an inode limit, nosuid and nodev) holding a copy of
// the host path: the host packs what the sandbox identity may read into a
// tar stream that the sandbox's init unpacks before any command runs
// (Pack, Unpack); after each command the sandbox exports the staged paths
// again (Export) and the host applies the difference (Apply).
//
// The export is untrusted input. Apply works by file descriptor below each
// staged path, never follows a symlink, never creates a FIFO, socket or
// device, drops set-id bits, never touches an unreadable (credential)
// path, and never overwrites what changed on the host since the copy was
// taken: the host's version wins and the conflict is reported.
package stage

import (
	"path"
	"strings"
	"time"
)

// Kinds of staged path.
const (
	KindDir  = "dir"
	KindFile = "file"
	// KindLink: a symlink copied in only (it sits in a skeleton directory
	// and is never written back).
	KindLink = "link"
	// KindSkeleton: a directory staged only to hold writable files; the
	// export names what else was written there (discarded) so the caller
	// can say so.
	KindSkeleton = "skeleton"
)

// The export's last entry: its absence means the stream was cut.
const (
	typeEnd byte = 'Z'
	// typeOver, first in an export, says a staged path holds more entries
	// than its bound: nothing of the export is to be applied.
	typeOver byte = 'O'
	endName       = "triage-sandbox-export-end"
	overName      = "triage-sandbox-export-over"
)

// typeDiscarded names, in an export, an entry written in a skeleton
// outside the writable paths: it is not copied back.
const typeDiscarded byte = 'X'

// Path is one staged path: its absolute path is the same on the host and
// inside the sandbox.
type Path struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// Spec is what to stage.
type Spec struct {
	Paths []Path
	// Skip are unreadable paths: never copied in, never written back.
	Skip []string
	// UID and GID are the sandbox identity: only what it could read on the
	// host is copied in.
	UID, GID int
	// MaxBytes bounds what Apply accepts (the staged filesystems' total
	// size); MaxEntries the number of entries.
	MaxBytes   int64
	MaxEntries int
	// MaxEntriesPerPath bounds the entries under each staged path (its
	// filesystem's inode bound), for a sandbox whose own filesystem does not.
	MaxEntriesPerPath int
	// Chown: what Apply writes is owned by UID:GID (when triage-sandbox
	// runs as root, the outputs keep the sandbox identity's ownership, as
	// if the sandbox had written them); otherwise by the caller.
	Chown bool
}

// State is what the host had at one staged name when the copy was taken.
type State struct {
	Type  byte // tar type flag
	Size  int64
	Mode  int64
	MTime time.Time
	// Link is a symlink's target.
	Link string
}

// typeHidden marks, in a manifest, a host entry the sandbox identity may
// not read: it was not copied in, and nothing is written at or below it.
const typeHidden byte = 'h'

// Manifest is what Pack copied in, by tar name (the absolute path without
// its leading slash); Apply compares against it.
type Manifest map[string]State

// Change is one thing Apply did or refused.
type Change struct {
	Path   string `json:"path"`
	Action string `json:"action"` // written, deleted, conflict, dropped
	Detail string `json:"detail,omitempty"`
	// KeptAs, for a conflict, is where the sandbox's version was kept
	// beside the host's (an absolute host path); "" when it was not.
	KeptAs string `json:"kept_as,omitempty"`
}

// Report is what one Apply did.
type Report struct {
	Written int      `json:"written"`
	Deleted int      `json:"deleted"`
	Changes []Change `json:"changes,omitempty"` // conflicts and drops only
	// Discarded are entries written next to writable files but outside
	// the writable paths: gone with the sandbox.
	Discarded []string `json:"discarded,omitempty"`
	Bytes     int64    `json:"bytes"`
	Duration  time.Duration
}

// tarName is how an absolute path is named in the stream.
func tarName(abs string) string { return strings.TrimPrefix(path.Clean(abs), "/") }

// under reports whether name (a tar name) is root or lies below it.
func under(name, root string) bool {
	return name == root || strings.HasPrefix(name, root+"/")
}

// cleanName accepts only a clean, relative, non-escaping tar name.
func cleanName(name string) (string, bool) {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return "", false
	}
	c := path.Clean(name)
	if c != strings.TrimSuffix(name, "/") || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// rootOf returns the staged path a tar name belongs to: the writable
// paths first, then the skeletons that hold some of them.
func rootOf(name string, paths []Path) (Path, bool) {
	for _, p := range paths {
		if p.Kind != KindSkeleton && under(name, tarName(p.Path)) {
			return p, true
		}
	}
	for _, p := range paths {
		if p.Kind == KindSkeleton && under(name, tarName(p.Path)) {
			return p, true
		}
	}
	return Path{}, false
}

func skipped(name string, skip []string) bool {
	for _, s := range skip {
		if under(name, tarName(s)) {
			return true
		}
	}
	return false
}

// hiddenAt reports whether name or one of its parents is hidden in m.
func (m Manifest) hiddenAt(name string) bool {
	for n := name; n != "." && n != "/" && n != ""; n = path.Dir(n) {
		if st, ok := m[n]; ok && st.Type == typeHidden {
			return true
		}
	}
	return false
}
