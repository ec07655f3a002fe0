package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// maxLinkHops bounds viaWritable's walk, as the kernel bounds a lookup (40).
const maxLinkHops = 40

// sandboxWritten are the workspace's writable paths of every role,
// absolute: what any sandbox of this config may have written (copy-back
// keeps the symlinks it leaves), relative path as written beside each.
type sandboxWritten struct {
	abs, rel []string
}

// writtenBySandboxes lists the writable paths of every role of cfg under
// root (the canonical workspace root).
func writtenBySandboxes(cfg *config.File, root string) sandboxWritten {
	var w sandboxWritten
	for _, role := range profiles.Roles() {
		for _, rel := range writableList(cfg.Resolve(role), role) {
			abs := filepath.Join(root, filepath.Clean(rel))
			w.abs, w.rel = append(w.abs, abs), append(w.rel, rel)
		}
	}
	return w
}

// covering returns the writable path p is in.
func (w sandboxWritten) covering(p string) (string, bool) {
	for i, a := range w.abs {
		if within(a, p) {
			return w.rel[i], true
		}
	}
	return "", false
}

// via reports the writable path that p lies in or resolves through: p
// itself, then each path its symlinks lead to, one link at a time (a
// link at the root into a writable path counts, however the rest
// resolves). A walk past maxLinkHops counts as reaching one: fail closed.
func (w sandboxWritten) via(p string) (string, bool) {
	p = filepath.Clean(p)
	for hop := 0; hop <= maxLinkHops; hop++ {
		if rel, ok := w.covering(p); ok {
			return rel, true
		}
		next, ok := firstLink(p)
		if !ok {
			return "", false
		}
		p = next
	}
	return fmt.Sprintf("(more than %d symlinks)", maxLinkHops), true
}

// firstLink replaces the first component of the absolute path p that is
// a symlink with its target; ok is false when p holds none (or a
// component does not exist: nothing below it resolves anywhere).
func firstLink(p string) (string, bool) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", false
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(next)
			if err != nil {
				return "", false
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			return filepath.Join(append([]string{target}, parts[i+1:]...)...), true
		}
		cur = next
	}
	return "", false
}

// checkSource refuses a read-only source the config names (what, as
// raw) at path when it lies in, or resolves through, a writable path: a
// sandbox could have pointed it at any host directory for the next run.
func (w sandboxWritten) checkSource(cfg *config.File, what, raw, path string) error {
	rel, ok := w.via(path)
	if !ok {
		return nil
	}
	return fmt.Errorf("%s: %s %q lies in the writable path %s (or resolves through it), where a sandbox could have left a symlink to any host directory; keep it out of the writable paths",
		configName(cfg), what, raw, rel)
}
