package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/hostread"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// maxLinkHops bounds viaWritable's walk, as the kernel bounds a lookup (40).
const maxLinkHops = 40

// The one rule for policy inputs: nothing the policy is computed from may
// be writable by any sandbox of this workspace. A sandbox's writes are
// copied back to the host (symlinks included), so a file in a writable
// path, or a path that resolves through one, is whatever the last sandbox
// of any role made it: a pyvenv.cfg whose home names ~/.config/gcloud, a
// read_only directory replaced by a link to $HOME, a go.sum naming the
// maintainer's private modules. Each input is checked where it is found
// (sandboxWritten.check) and listed in the policy (Policy.Inputs).

// sandboxWritten are the workspace's writable paths of every role,
// absolute: what any sandbox of this config may have written (copy-back
// keeps the symlinks it leaves), relative path as written beside each.
// inputs collects what was checked, for Policy.Inputs.
type sandboxWritten struct {
	cfg      *config.File
	abs, rel []string
	inputs   *[]Input
	// rd notes what the checks read (Host.Reads).
	rd *hostread.Recorder
}

// writtenBySandboxes lists the writable paths of every role of cfg under
// root (the canonical workspace root).
func writtenBySandboxes(rd *hostread.Recorder, cfg *config.File, root string) sandboxWritten {
	w := sandboxWritten{cfg: cfg, inputs: new([]Input), rd: rd}
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
	rd := w.rd
	p = filepath.Clean(p)
	for hop := 0; hop <= maxLinkHops; hop++ {
		if rel, ok := w.covering(p); ok {
			return rel, true
		}
		next, ok := firstLink(rd, p)
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
func firstLink(rd *hostread.Recorder, p string) (string, bool) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := rd.Lstat(next)
		if err != nil {
			return "", false
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := rd.Readlink(next)
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

// check records the policy input at path (what names it: the config
// key and value, or the file that named it) and refuses it when it lies
// in, or resolves through, a writable path: a sandbox could have written
// it, or pointed it at any host directory, for the next run.
func (w sandboxWritten) check(what, path string) error {
	rd := w.rd
	path = filepath.Clean(path)
	rel, ok := w.via(path)
	*w.inputs = append(*w.inputs, Input{Path: path, What: what, OwnerUID: ownerUID(rd, path), SandboxWritable: ok, Via: rel})
	if !ok {
		return nil
	}
	return fmt.Errorf("%s: %s lies in the writable path %s (or resolves through it), where a sandbox could have written it or left a symlink to any host directory; keep it out of the writable paths",
		configName(w.cfg), what, rel)
}

// holding refuses a directory the policy reads below (what names it)
// that holds a writable path: a sandbox could change what is read there.
func (w sandboxWritten) holding(what, dir string) error {
	for i, a := range w.abs {
		if a != dir && within(dir, a) {
			return fmt.Errorf("%s: %s holds the writable path %s, where a sandbox could change what the policy reads there; keep the writable paths out of it",
				configName(w.cfg), what, w.rel[i])
		}
	}
	return nil
}

// list is what was checked, each path once, in order.
func (w sandboxWritten) list() []Input {
	var out []Input
	seen := map[string]bool{}
	for _, in := range *w.inputs {
		if !seen[in.Path] {
			seen[in.Path] = true
			out = append(out, in)
		}
	}
	return out
}

// ownerUID owns path, not following a symlink at its end (-1: missing).
func ownerUID(rd *hostread.Recorder, path string) int {
	fi, err := rd.Lstat(path)
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
