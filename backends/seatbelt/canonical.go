package seatbelt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Canonicalizer turns an absolute host path into the spelling the macOS
// kernel matches rules against. Rules written against any other spelling
// never match (a /tmp rule is dead: the kernel sees /private/tmp).
type Canonicalizer interface {
	Canonical(path string) (string, error)
}

// Links is what resolution needs to know about the filesystem: whether a
// path exists and, if it is a symlink, its target. Tests fake it.
type Links interface {
	// Readlink returns the target of a symlink; isLink is false for an
	// existing non-link; err wraps fs.ErrNotExist for a missing path.
	Readlink(path string) (target string, isLink bool, err error)
}

// Resolver canonicalises by resolving symlinks through the nearest
// existing ancestor (what does not exist yet is kept as written), then
// applying macOS's fixed root links, so a profile rendered on Linux has
// the spelling macOS will see.
type Resolver struct{ FS Links }

// HostResolver resolves against this machine's filesystem.
func HostResolver() Resolver { return Resolver{FS: osLinks{}} }

type osLinks struct{}

func (osLinks) Readlink(p string) (string, bool, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", false, err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return "", false, nil
	}
	t, err := os.Readlink(p)
	return t, err == nil, err
}

// macRootLinks are macOS's symlinked system roots; /Users is a firmlink and
// keeps its name.
var macRootLinks = []struct{ from, to string }{
	{"/tmp", "/private/tmp"}, {"/var", "/private/var"}, {"/etc", "/private/etc"},
}

// maxLinks bounds symlink hops, as the kernel's ELOOP does.
const maxLinks = 40

// maxPath is the longest path the renderer passes: sandbox-exec's string
// limit is about 1 KiB and every value must stay clear of it.
const maxPath = 900

// CheckPath refuses what cannot be a safe SBPL path: relative, "..",
// control characters, NUL, invalid UTF-8, over maxPath bytes. macOS
// resolves ".." after following symlinks, so a lexical clean would be
// wrong: such a path is refused rather than guessed at.
func CheckPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is not absolute", p)
	case !utf8.ValidString(p):
		return fmt.Errorf("%q is not valid UTF-8", p)
	case len(p) > maxPath:
		return fmt.Errorf("%.60q... is %d bytes, over the %d a Seatbelt profile can carry", p, len(p), maxPath)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%q contains the control character %U", p, r)
		}
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("%q contains \"..\"", p)
		}
	}
	return nil
}

// Canonical implements Canonicalizer.
func (r Resolver) Canonical(p string) (string, error) {
	if err := CheckPath(p); err != nil {
		return "", err
	}
	out, err := r.resolve(filepath.Clean(p))
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", p, err)
	}
	for _, l := range macRootLinks {
		if out == l.from || strings.HasPrefix(out, l.from+"/") {
			out = l.to + out[len(l.from):]
		}
	}
	if err := CheckPath(out); err != nil {
		return "", fmt.Errorf("%s resolves to a path Seatbelt cannot carry: %w", p, err)
	}
	return out, nil
}

// resolve follows symlinks component by component while the path exists;
// from the first missing component on, the rest is kept as written.
func (r Resolver) resolve(p string) (string, error) {
	todo := splitPath(p)
	done := "/"
	hops := 0
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case ".":
			continue
		case "..": // only from a link target: relative to where the link really is
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, part)
		target, isLink, err := r.FS.Readlink(next)
		if errors.Is(err, fs.ErrNotExist) {
			rest := append([]string{part}, todo...)
			for _, q := range rest {
				if q == ".." {
					return "", fmt.Errorf("%s: \"..\" below a path that does not exist", p)
				}
			}
			return filepath.Join(append([]string{done}, rest...)...), nil
		}
		if err != nil {
			return "", err
		}
		if !isLink {
			done = next
			continue
		}
		if hops++; hops > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		if strings.HasPrefix(target, "/") {
			done = "/"
		}
		todo = append(splitPath(target), todo...)
	}
	return done, nil
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
