package hints

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// seenBy reports whether id, the sandbox's identity, could learn that path
// exists on the host: walked from / one component at a time, no component
// is a symlink (the sandbox resolves links in its own view, not the
// host's), every directory on the way grants id search, and the path
// itself grants id read. uid 0 gets no privilege: the sandbox never runs
// as root, and a host lookup made as root must not stand in for it.
func (h Host) seenBy(id policy.Identity, path string) bool {
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) {
		return false
	}
	e, ok := h.lstat("/")
	if !ok || !grants(e, id, 0o1) {
		return false
	}
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := "/"
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		e, ok := h.lstat(cur)
		if !ok || e.Mode&os.ModeSymlink != 0 {
			return false
		}
		if i == len(parts)-1 {
			return grants(e, id, 0o4)
		}
		if !e.Mode.IsDir() || !grants(e, id, 0o1) {
			return false
		}
	}
	return false // path is "/": nothing to hint at
}

// ownerWithin is the owner and mode of path or, when it does not exist, of
// its nearest existing directory, walked down from root (a mount's root, which
// the sandbox sees) as seenBy walks: false at a symlink (its target is the
// host's, not what the sandbox saw) or below a directory id cannot search.
func (h Host) ownerWithin(id policy.Identity, root, path string) (Owner, bool) {
	root, path = filepath.Clean(root), filepath.Clean(path)
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return Owner{}, false
	}
	e, ok := h.lstat(root)
	if !ok || e.Mode&os.ModeSymlink != 0 {
		return Owner{}, false
	}
	last := Owner{Path: root, UID: e.UID, GID: e.GID, Mode: e.Mode}
	if rel == "." {
		return last, true
	}
	cur := root
	for _, part := range strings.Split(rel, "/") {
		if !last.Mode.IsDir() || !grants(Entry{UID: last.UID, GID: last.GID, Mode: last.Mode}, id, 0o1) {
			return last, true // the sandbox could go no further
		}
		cur = filepath.Join(cur, part)
		e, ok := h.lstat(cur)
		if !ok {
			return last, true // the nearest existing directory
		}
		if e.Mode&os.ModeSymlink != 0 {
			return Owner{}, false
		}
		last = Owner{Path: cur, UID: e.UID, GID: e.GID, Mode: e.Mode}
	}
	return last, true
}

// grants reports whether e's mode gives id the permission bits want (0o4
// read, 0o1 search) by the class id falls in, as the kernel picks it:
// owner, else group, else other. uid 0 is treated as any other uid.
func grants(e Entry, id policy.Identity, want os.FileMode) bool {
	perm := e.Mode.Perm()
	switch {
	case e.UID == id.UID:
		perm >>= 6
	case e.GID == id.GID:
		perm >>= 3
	}
	return perm&want == want
}
