package guard

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Bounds on what CollectScripts reads for the model.
const (
	DefaultScriptBytes = 200_000   // per file, as ai-triager
	maxScripts         = 8         // files shown with their content
	maxListed          = 24        // further files shown by path only (Truncated, empty)
	maxScriptTotal     = 1_000_000 // content bytes over all files
	maxCandidates      = 256       // words and word pieces looked at
)

// reproScript is ai-triager's reproducer naming: repros/N.py runs with
// repros/N_app.py (a served app) and repros/N_check.py (its check).
var reproScript = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.*/)?repros/([0-9]+)\.py$`) })

// CollectScripts returns the files the command line names that the model
// should read: each literal word (and each piece of a word split at shell
// punctuation and spaces, so `sh -c 'python3 repros/1.py'` counts),
// resolved against workdir, that is a regular file under workspace — no
// ".." escape, symlinks resolved and still under the workspace, opened
// without following a final symlink and without blocking (a FIFO is
// skipped). A word naming repros/N.py also brings repros/N_app.py and
// repros/N_check.py, and `triage.py run|browse N` brings all three.
//
// Each file is cut at maxBytes (0 = DefaultScriptBytes) with Truncated set.
// The first maxScripts files carry content within a total budget; later
// ones are listed by path only (Truncated, empty), so the model knows they
// exist unseen. Files that cannot be read safely are left out.
func CollectScripts(ctx context.Context, words []string, workspace, workdir string, maxBytes int64) []Script {
	scripts, _ := CollectScriptsIn(ctx, words, workspace, workdir, maxBytes, nil)
	return scripts
}

// Origin is where the file the sandbox that runs the command sees at a
// path comes from.
type Origin int

const (
	// FromHost: the sandbox sees the host's file there (a read-only mount
	// of it, or a copy taken when the sandbox starts): the host's copy is
	// what runs, and the guard reads it.
	FromHost Origin = iota
	// Hidden: the sandbox does not see the host's file there (a masked
	// credential, a path not mounted): nothing is shown for it.
	Hidden
	// FromSandbox: the sandbox may hold a version of its own there (a
	// session's overlay or staged copy, written by its earlier commands):
	// the host's copy may not be what runs, so the command cannot be
	// judged.
	FromSandbox
)

// View says where the sandbox's file at an absolute host path comes from
// and, for FromSandbox, why (one clause, for the refusal).
type View func(path string) (Origin, string)

// UnjudgeableError is a file the command names whose content in the
// sandbox the guard cannot read.
type UnjudgeableError struct {
	Path string // as the command names it, relative to the workspace when below it
	Why  string
}

func (e *UnjudgeableError) Error() string {
	return "the guard cannot judge " + e.Path + ": " + e.Why
}

// CollectScriptsIn is CollectScripts for the sandbox view describes: each
// candidate path, as named and as it resolves on the host, is asked of
// view first; one the sandbox may hold its own version of ends the
// collection with an *UnjudgeableError (the guard never judges a
// different copy than the one that runs), one it does not see is left
// out. A nil view takes every path as the host's.
func CollectScriptsIn(ctx context.Context, words []string, workspace, workdir string, maxBytes int64, view View) ([]Script, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultScriptBytes
	}
	wsAbs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, nil
	}
	wsReal, err := filepath.EvalSymlinks(wsAbs)
	if err != nil {
		return nil, nil
	}
	switch {
	case workdir == "":
		workdir = wsAbs
	case !filepath.IsAbs(workdir):
		workdir = filepath.Join(wsAbs, workdir)
	}
	rootfd, err := unix.Open(wsReal, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	defer unix.Close(rootfd)
	c := &collector{wsAbs: wsAbs, wsReal: wsReal, rootfd: rootfd, maxBytes: maxBytes, seen: map[string]bool{}, view: view}
	for _, cand := range candidates(words, workdir, wsAbs) {
		// Every candidate is asked of the view, even past the listing
		// bound: a file the guard cannot read must refuse the command.
		if ctx.Err() != nil {
			break
		}
		if err := c.check(cand); err != nil {
			return nil, err
		}
		if len(c.out) < maxScripts+maxListed {
			if err := c.add(cand); err != nil {
				return nil, err
			}
		}
	}
	return c.out, nil
}

type collector struct {
	wsAbs, wsReal string
	rootfd        int
	maxBytes      int64
	used          int64 // content bytes so far
	shown         int   // files with content
	seen          map[string]bool
	out           []Script
	view          View
	hidden        map[string]bool // paths view left out
}

// check asks the view about p as named, as its existing part resolves on
// the host (a symlink there is the sandbox's too, read-only or copied),
// and as it resolves whole: a path the sandbox may hold its own version
// of, by any of these, cannot be judged.
func (c *collector) check(p string) error {
	if c.view == nil {
		return nil
	}
	for _, q := range []string{p, resolveExisting(p)} {
		switch o, why := c.view(q); o {
		case FromSandbox:
			return &UnjudgeableError{Path: c.named(p), Why: why}
		case Hidden:
			if c.hidden == nil {
				c.hidden = map[string]bool{}
			}
			c.hidden[p] = true
		}
	}
	return nil
}

// named is p as the refusal names it: relative to the workspace when
// below it.
func (c *collector) named(p string) string {
	if within(c.wsAbs, p) && p != c.wsAbs {
		if rel, err := filepath.Rel(c.wsAbs, p); err == nil {
			return rel
		}
	}
	return p
}

// ResolveExisting is p with the symlinks of its longest existing prefix
// resolved on the host: where a file that does not exist there would be.
func ResolveExisting(p string) string { return resolveExisting(p) }

func resolveExisting(p string) string {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// add collects the absolute path p when it is a regular file under the
// workspace that the sandbox sees as the host has it.
func (c *collector) add(p string) error {
	if c.hidden[p] || !within(c.wsAbs, p) && !within(c.wsReal, p) {
		return nil
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil || real == c.wsReal || !within(c.wsReal, real) || c.seen[real] {
		return nil
	}
	// Asked again of what is read: a host symlink changed since check
	// must not lead the guard to another copy.
	if c.view != nil {
		switch o, why := c.view(real); o {
		case FromSandbox:
			return &UnjudgeableError{Path: c.named(p), Why: why}
		case Hidden:
			return nil
		}
	}
	rel, err := filepath.Rel(c.wsReal, real)
	if err != nil {
		return nil
	}
	budget := min(c.maxBytes, maxScriptTotal-c.used)
	if c.shown >= maxScripts {
		budget = 0
	}
	data, truncated, ok := c.read(rel, budget)
	if !ok {
		return nil
	}
	c.seen[real] = true
	shown, err := filepath.Rel(c.wsAbs, p)
	if err != nil || !within(c.wsAbs, p) {
		shown, _ = filepath.Rel(c.wsReal, p)
	}
	if budget > 0 {
		c.shown++
		c.used += int64(len(data))
	}
	c.out = append(c.out, Script{Path: shown, Content: string(data), Truncated: truncated})
	return nil
}

// read opens rel below the workspace one component at a time, each without
// following a symlink: a directory swapped for a symlink after EvalSymlinks
// fails the open instead of leading outside.
func (c *collector) read(rel string, max int64) ([]byte, bool, bool) {
	parts := strings.Split(rel, "/")
	dirfd := c.rootfd
	for _, part := range parts[:len(parts)-1] {
		next, err := unix.Openat(dirfd, part, dirFlags, 0)
		if dirfd != c.rootfd {
			unix.Close(dirfd)
		}
		if err != nil {
			return nil, false, false
		}
		dirfd = next
	}
	if dirfd != c.rootfd {
		defer unix.Close(dirfd)
	}
	data, truncated, err := readRegularAt(dirfd, parts[len(parts)-1], rel, max)
	if err != nil {
		return nil, false, false
	}
	return data, truncated, true
}

// candidates lists, in command order and without repeats, the absolute
// paths the words may name, each repros/N.py followed by its companions.
func candidates(words []string, workdir, wsAbs string) []string {
	var toks []string
	for _, w := range words {
		toks = append(toks, w)
		if pieces := strings.FieldsFunc(w, isShellBreak); len(pieces) != 1 || pieces[0] != w {
			toks = append(toks, pieces...)
		}
	}
	var out []string
	seen := map[string]bool{}
	push := func(p string) {
		if len(out) < maxCandidates && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	withCompanions := func(p string) {
		push(p)
		if reproScript().MatchString(p) {
			push(strings.TrimSuffix(p, ".py") + "_app.py")
			push(strings.TrimSuffix(p, ".py") + "_check.py")
		}
	}
	for i, t := range toks {
		if t == "" || strings.HasPrefix(t, "-") {
			continue
		}
		p := t
		if !filepath.IsAbs(p) {
			p = filepath.Join(workdir, p)
		}
		withCompanions(filepath.Clean(p))
		// ai-triager's `./triage.py run N` / `browse N` runs repros/N.py.
		if strings.HasSuffix(t, "triage.py") && i+2 < len(toks) &&
			(toks[i+1] == "run" || toks[i+1] == "browse") && isDigits(toks[i+2]) {
			withCompanions(filepath.Join(wsAbs, "repros", toks[i+2]+".py"))
		}
	}
	return out
}

func isShellBreak(r rune) bool {
	return strings.ContainsRune(" \t\n\r;&|()<>'\"`$=,{}", r)
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
