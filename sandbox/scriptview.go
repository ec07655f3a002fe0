package sandbox

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/gate/guard"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// scriptView tells the guard where the file a sandbox of p sees at a host
// path comes from, so it judges only the copy that will run (issue 35).
//
// kept: the sandbox runs, or may have run, earlier commands (a session,
// whose checkout overlay, staged writable paths and skeletons keep what
// those commands wrote, and whose staged copy does not follow the host's
// later changes). A fresh sandbox (a one-shot run, a pooled one: each runs
// exactly one command) starts from the host's copy of every path, taken
// after the gate judged; what the same command writes before it runs is in
// the command line the guard is shown.
//
// The decision goes by the mount that covers the path, the deepest one:
//   - a masked (unreadable) path, or one a mount hides: Hidden, the
//     sandbox sees an empty mask;
//   - no mount: Hidden, the sandbox does not see the host's file;
//   - a read-only mount: FromHost, the host's live file;
//   - kept, under a discard mount (the checkout's overlay, a prepared
//     cache), a staged writable path or a skeleton (a directory staged to
//     hold writable files, where anything else written stays in the
//     sandbox): FromSandbox, unless the path is a directory on the host
//     all the way down (found without following a symlink), which names
//     no script;
//   - otherwise FromHost.
//
// In a kept sandbox a path there is refused only when the command runs it
// (scripts: the gate's words in a script's place, absolute, and as they
// resolve on the host); a path the command only names (cat co/README,
// git log in co, printf > co/x) is not shown to the guard, since the
// host's copy may not be the session's, and the command is judged on its
// text.
//
// written are the files the command line writes itself (redirections,
// downloads): in a path the sandbox may write, the host's copy is not what
// the command leaves there, so it is not shown (what is written is in the
// command the guard is shown, or came from a download the gate judges).
func scriptView(p *policy.Policy, kept bool, scripts, written map[string]bool) guard.View {
	return func(path string) (guard.Origin, string) {
		path = filepath.Clean(path)
		if kept && scripts[path] && isPattern(path) {
			if o, why, ok := patternView(p, path); ok {
				return o, why
			}
		}
		cover, ok := visibleCover(p, path)
		if !ok {
			return guard.Hidden, ""
		}
		owned := cover.Discard || cover.staged
		switch {
		case owned && written[path] && !(kept && scripts[path]):
			return guard.Hidden, ""
		case !kept:
			return guard.FromHost, ""
		}
		return keptView(cover, path, scripts[path])
	}
}

// patternView judges a pattern the shell expands in a kept sandbox:
// refused (ok) when it may reach below a path the session holds its own
// version of.
func patternView(p *policy.Policy, path string) (guard.Origin, string, bool) {
	lit, _ := coveringMount(p, literalPrefix(path))
	for _, m := range ownedRoots(p) {
		// What the literal part names lies under a read-only mount deeper
		// than m: the host's, wherever the pattern leads.
		if lit.ReadOnly && !lit.Discard && len(lit.Path) > len(m.Path) {
			continue
		}
		if patternReaches(path, m) {
			return guard.FromSandbox, "in this session the pattern may match the session's own files under " + m.Path +
				", not the host's copies the guard reads; name the file, and run it outside the session, where a fresh sandbox starts from the host's copy", true
		}
	}
	return guard.FromHost, "", false
}

// visibleCover is the mount that shows path to the sandbox; none where
// path is unreadable, hidden or not mounted.
func visibleCover(p *policy.Policy, path string) (cover, bool) {
	for _, u := range p.Unreadable {
		if under(u, path) {
			return cover{}, false
		}
	}
	c, ok := coveringMount(p, path)
	if !ok {
		return cover{}, false
	}
	for _, h := range c.Hidden {
		if under(h, path) {
			return cover{}, false
		}
	}
	return c, true
}

// keptView judges a path in a kept sandbox: the host's copy where the
// session holds no copy of its own (or path is a directory of the host),
// hidden where it is only named, refused where it is run.
func keptView(cover cover, path string, script bool) (guard.Origin, string) {
	var why string
	switch {
	case cover.Discard:
		why = "in this session the writes of earlier commands under " + cover.Path + " live in the session's overlay, not in the host's copy the guard reads"
	case cover.staged:
		why = "in this session " + cover.Path + " is the session's own copy (what its earlier commands wrote there, not the host's later changes), not the host's copy the guard reads"
	default:
		return guard.FromHost, ""
	}
	if path == cover.Path && cover.Kind != "file" || hostDir(cover.Path, path) {
		return guard.FromHost, ""
	}
	if !script {
		// Named, not run (cat, git log, printf >): the host's copy is not
		// shown, since it may not be the session's; nothing to refuse.
		return guard.Hidden, ""
	}
	return guard.FromSandbox, why + "; run it outside the session, where a fresh sandbox starts from the host's copy"
}

// cover is the mount that decides what the sandbox sees at a path.
type cover struct {
	policy.Mount
	// staged: a writable path or skeleton directory that the sandbox holds
	// as a copy of its own (policy.Staging).
	staged bool
}

// coveringMount is the deepest of p's mounts and skeleton directories
// that holds path.
func coveringMount(p *policy.Policy, path string) (cover, bool) {
	var best cover
	found := false
	consider := func(c cover) {
		if under(c.Path, path) && (c.Kind != "file" || c.Path == path) && (!found || len(c.Path) > len(best.Path)) {
			best, found = c, true
		}
	}
	for _, m := range p.Mounts {
		consider(cover{Mount: m, staged: !m.ReadOnly && p.Staged()})
	}
	for _, s := range p.Staging.Skeletons {
		consider(cover{Mount: policy.Mount{Path: s, Kind: "dir"}, staged: true})
	}
	return best, found
}

// hostDir reports whether path, below root, is a directory on the host
// reached without following a symlink.
func hostDir(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	fd, err := hostfs.OpenDirBeneath(root, rel, false)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// under reports whether p is dir or below it.
func under(dir, p string) bool {
	return dir == p || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// isPattern reports whether the shell may expand path: a glob or a brace.
func isPattern(path string) bool { return strings.ContainsAny(path, "*?[{") }

// literalPrefix is path up to its first component the shell may expand.
func literalPrefix(path string) string {
	parts := strings.Split(path, "/")
	for i, c := range parts {
		if isPattern(c) {
			return strings.Join(parts[:i], "/")
		}
	}
	return path
}

// ownedRoots are the paths under which a kept sandbox may hold its own
// files: discard mounts, staged writable paths and skeleton directories.
func ownedRoots(p *policy.Policy) []policy.Mount {
	var out []policy.Mount
	for _, m := range p.Mounts {
		if m.Discard || !m.ReadOnly && p.Staged() {
			out = append(out, m)
		}
	}
	for _, s := range p.Staging.Skeletons {
		out = append(out, policy.Mount{Path: s, Kind: "dir"})
	}
	return out
}

// patternReaches reports whether pattern, expanded, may name root or a
// path below it other than a directory the pattern stops at: each of
// root's components is matched by the pattern's (a component with a
// brace matches anything), and the pattern goes on, or root is a file.
func patternReaches(pattern string, root policy.Mount) bool {
	pc, rc := strings.Split(pattern, "/"), strings.Split(root.Path, "/")
	if len(pc) < len(rc) || len(pc) == len(rc) && root.Kind != "file" {
		return false
	}
	for i := range rc {
		if strings.Contains(pc[i], "{") {
			continue
		}
		if ok, err := filepath.Match(pc[i], rc[i]); err != nil || !ok {
			return err != nil // a malformed pattern: fail closed
		}
	}
	return true
}

// scriptSet is the gate's words (in a script's place, or written) as absolute host paths (against
// the command's directory), each also as it resolves on the host.
func scriptSet(p *policy.Policy, words []string) map[string]bool {
	dir := p.Workdir
	switch {
	case dir == "":
		dir = p.WorkspaceRoot
	case !filepath.IsAbs(dir):
		dir = filepath.Join(p.WorkspaceRoot, dir)
	}
	set := map[string]bool{}
	for _, w := range words {
		if !filepath.IsAbs(w) {
			w = filepath.Join(dir, w)
		}
		w = filepath.Clean(w)
		set[w] = true
		set[guard.ResolveExisting(w)] = true
	}
	return set
}
