// Package hostread is how the policy compiler reads the host. Every read
// goes through a *Recorder; a nil one just reads. A non-nil one first
// notes the path and its identity (device, inode, mode, owner, size,
// mtime, ctime, a symlink's target; an absent path as absent; of a
// directory not listed, only its device, inode, mode and owner), so a
// compiled policy can be reused for exactly as long as nothing it read
// has changed (Read.Unchanged). The identity is taken before the read: a
// change racing the read leaves the old identity, which then differs.
package hostread

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Kind is how a path was looked at.
type Kind uint8

const (
	// Follow: stat, open, read: what the path resolves to.
	Follow Kind = iota
	// NoFollow: lstat, readlink: the path itself (a symlink's target
	// text is part of its identity).
	NoFollow
	// List: a directory's entries were read. Its mtime and ctime change
	// with every entry added, removed or renamed, so the identity covers
	// the listing and the types read from it.
	List
	// Exists: only whether stat succeeds was used (an environment
	// value that names a file is not a secret): a file that changes
	// keeps its identity.
	Exists
)

func (k Kind) String() string {
	switch k {
	case Follow:
		return "follow"
	case NoFollow:
		return "nofollow"
	case Exists:
		return "exists"
	}
	return "list"
}

// Read is one path the compile looked at and what it was then.
type Read struct {
	Path  string
	Kind  Kind
	Ident Ident
}

// Unchanged: the path is still what it was when read.
func (r Read) Unchanged() bool {
	now := identOf(r.Path, r.Kind)
	return now == r.Ident && now.Err != errUnsupported
}

// Recorder notes what a compile reads. Its zero value is ready; a nil
// *Recorder reads without noting. Safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	seen  map[key]bool
	reads []Read
}

type key struct {
	path string
	kind Kind
}

// Reads is what was read so far, in order, each path and kind once.
func (r *Recorder) Reads() []Read {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Read(nil), r.reads...)
}

// note records path's identity the first time path is looked at as kind.
func (r *Recorder) note(path string, kind Kind) {
	if r == nil {
		return
	}
	k := key{path, kind}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[k] {
		return
	}
	if r.seen == nil {
		r.seen = map[key]bool{}
	}
	r.seen[k] = true
	r.reads = append(r.reads, Read{Path: path, Kind: kind, Ident: identOf(path, kind)})
}

// Stat is os.Stat.
func (r *Recorder) Stat(path string) (fs.FileInfo, error) {
	r.note(path, Follow)
	return os.Stat(path)
}

// Exists says whether os.Stat succeeds on path.
func (r *Recorder) Exists(path string) bool {
	r.note(path, Exists)
	_, err := os.Stat(path)
	return err == nil
}

// Lstat is os.Lstat.
func (r *Recorder) Lstat(path string) (fs.FileInfo, error) {
	r.note(path, NoFollow)
	return os.Lstat(path)
}

// ReadFile is os.ReadFile.
func (r *Recorder) ReadFile(path string) ([]byte, error) {
	r.note(path, Follow)
	return os.ReadFile(path)
}

// Open is os.Open.
func (r *Recorder) Open(path string) (*os.File, error) {
	r.note(path, Follow)
	return os.Open(path)
}

// OpenNoFollow is os.OpenFile(path, O_RDONLY|O_NOFOLLOW|extra): the
// path itself, never a symlink's target.
func (r *Recorder) OpenNoFollow(path string, extra int) (*os.File, error) {
	r.note(path, NoFollow)
	return os.OpenFile(path, os.O_RDONLY|noFollow|extra, 0)
}

// ReadDir is os.ReadDir.
func (r *Recorder) ReadDir(path string) ([]os.DirEntry, error) {
	r.note(path, List)
	return os.ReadDir(path)
}

// NoteList notes a directory about to be listed by other means (a raw
// getdents loop).
func (r *Recorder) NoteList(path string) { r.note(path, List) }

// Readlink is os.Readlink.
func (r *Recorder) Readlink(path string) (string, error) {
	r.note(path, NoFollow)
	return os.Readlink(path)
}

// EvalSymlinks is filepath.EvalSymlinks. Its answer depends on every
// component on the way, and on every symlink's target's components:
// each is noted as NoFollow before the walk.
func (r *Recorder) EvalSymlinks(path string) (string, error) {
	if r != nil {
		r.noteChain(path, 0)
	}
	return filepath.EvalSymlinks(path)
}

// noteChain notes each component of path, following symlinks as
// EvalSymlinks would (up to its 255 links).
func (r *Recorder) noteChain(path string, links int) {
	if links > 255 {
		return
	}
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return
		}
		path = abs
	}
	path = filepath.Clean(path)
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := "/"
	for i, part := range parts {
		if part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		r.note(next, NoFollow)
		fi, err := os.Lstat(next)
		if err != nil {
			return
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(next)
			if err != nil {
				return
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			r.noteChain(filepath.Join(append([]string{target}, parts[i+1:]...)...), links+1)
			return
		}
		cur = next
	}
}

// Glob is filepath.Glob, its directories read through r.
func (r *Recorder) Glob(pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	if !hasMeta(pattern) {
		if _, err := r.Lstat(pattern); err != nil {
			return nil, nil
		}
		return []string{pattern}, nil
	}
	dir, file := filepath.Split(pattern)
	dir = cleanGlobPath(dir)
	if !hasMeta(dir) {
		return r.glob(dir, file, nil), nil
	}
	if dir == pattern {
		return nil, filepath.ErrBadPattern
	}
	dirs, err := r.Glob(dir)
	if err != nil {
		return nil, err
	}
	var m []string
	for _, d := range dirs {
		m = r.glob(d, file, m)
	}
	return m, nil
}

// glob adds to m the names in dir that match pattern.
func (r *Recorder) glob(dir, pattern string, m []string) []string {
	fi, err := r.Stat(dir)
	if err != nil || !fi.IsDir() {
		return m
	}
	entries, err := r.ReadDir(dir)
	if err != nil {
		return m
	}
	for _, e := range entries {
		if ok, _ := filepath.Match(pattern, e.Name()); ok {
			m = append(m, filepath.Join(dir, e.Name()))
		}
	}
	return m
}

func hasMeta(path string) bool { return strings.ContainsAny(path, `*?[\`) }

func cleanGlobPath(path string) string {
	switch path {
	case "":
		return "."
	case "/":
		return path
	}
	return path[:len(path)-1]
}
