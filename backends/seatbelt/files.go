package seatbelt

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Scratch subdirectories of the per-run directory.
const (
	homeDir = "home"
	tmpDir  = "tmp"
)

// Operations granted on what is readable: a readable tree is also
// mappable (shared libraries in a venv or Homebrew) and testable.
var readOps = []string{"file-read*", "file-test-existence", "file-map-executable"}

// scratch is this run's HOME and TMPDIR: one RUN_DIR parameter and two
// fixed subdirectories appended inside the profile.
func (r *renderer) scratch() error {
	dir, err := r.canon("the run directory", r.in.RunDir)
	if err != nil {
		return err
	}
	r.runParam = r.ps.fixed("RUN_DIR", dir)
	r.scratchPaths = policy.ScratchPaths{Home: dir + "/" + homeDir, Tmp: dir + "/" + tmpDir}
	ops := []string{"file-read*", "file-write*", "file-test-existence"}
	if r.p.Scratch.Exec {
		ops = append(ops, "file-map-executable")
	}
	r.prof.add(phaseWrite, rule{act: allow, ops: ops, comment: "This run's HOME and TMPDIR, fresh for every sandbox.",
		filters: []filter{
			pathFilter{kind: "subpath", param: r.runParam, suffix: "/" + homeDir},
			pathFilter{kind: "subpath", param: r.runParam, suffix: "/" + tmpDir},
		}})
	return nil
}

// writes allows writing the policy's writable paths: directories as
// subtrees, files as exactly themselves. Hard links are never allowed
// (see denies): Seatbelt matches paths, so a link made in a writable
// directory would make a read-only file writable under its new name.
func (r *renderer) writes() error {
	var fs []filter
	for _, m := range r.p.Mounts {
		if m.ReadOnly {
			continue
		}
		c, err := r.canon("the writable path "+m.Path, m.Path)
		if err != nil {
			return err
		}
		fs = append(fs, pathFilter{kind: kindOf(m), param: r.ps.name("WRITE", c)})
		r.rendered.Mounts = append(r.rendered.Mounts, backends.RenderedMount{Path: c, Writable: true, Tree: kindOf(m) == "subpath"})
	}
	if len(fs) > 0 {
		r.prof.add(phaseWrite, rule{act: allow, ops: []string{"file-write*"}, filters: fs,
			comment: "The policy's writable paths (written straight to the host: Seatbelt cannot stage them)."})
	}
	return nil
}

func kindOf(m policy.Mount) string {
	if m.Kind == "file" {
		return "literal"
	}
	return "subpath"
}

// readable is one allowed read: a tree or exactly one path.
type readable struct {
	path string
	tree bool
}

// reads allows the policy's readable base: its host roots, every mount
// (read-only and writable), the skeleton directories that hold writable
// files, the symlinks found in them and the triage-sandbox binary; then
// metadata (stat, not listing) of every directory above them, so realpath
// and getcwd work.
func (r *renderer) reads() error {
	var want []readable
	add := func(what, p string, tree bool) error {
		c, err := r.canon(what, p)
		if err == nil {
			want = append(want, readable{c, tree})
		}
		return err
	}
	for _, root := range r.p.Base.HostRoots {
		if err := add("the host root "+root, root, true); err != nil {
			return err
		}
	}
	for _, m := range r.p.Mounts {
		if err := add("the mount "+m.Path, m.Path, m.Kind != "file"); err != nil {
			return err
		}
	}
	for _, s := range r.p.Staging.Skeletons {
		if err := add("the directory "+s, s, false); err != nil {
			return err
		}
	}
	for _, l := range r.p.Staging.Links {
		if err := add("the symlink "+l, l, false); err != nil {
			return err
		}
	}
	if r.in.Self != "" {
		if err := add("the triage-sandbox binary", r.in.Self, false); err != nil {
			return err
		}
	}
	want = pruneCovered(want)
	var fs []filter
	for _, w := range want {
		kind, prefix := "literal", "READ_FILE"
		if w.tree {
			kind, prefix = "subpath", "READ"
		}
		fs = append(fs, pathFilter{kind: kind, param: r.ps.name(prefix, w.path)})
		r.rendered.Mounts = append(r.rendered.Mounts, backends.RenderedMount{Path: w.path, Tree: w.tree})
	}
	r.prof.add(phaseRead, rule{act: allow, ops: readOps, filters: fs,
		comment: "Readable: the policy's host roots and mounts; nothing else of the host is."})
	above := append(append([]readable(nil), want...), readable{path: r.scratchPaths.Home}, readable{path: r.scratchPaths.Tmp})
	var up []filter
	for _, a := range ancestors(above) {
		if !readableAlready(want, a) {
			up = append(up, pathFilter{kind: "literal", param: r.ps.name("UP", a)})
		}
	}
	if len(up) > 0 {
		r.prof.add(phaseRead, rule{act: allow, ops: []string{"file-read-metadata", "file-test-existence"}, filters: up,
			comment: "The directories above them: stat only, not listing."})
	}
	return nil
}

// pruneCovered sorts and drops duplicates and what a readable tree
// already covers (a path below it, or the same path as a literal).
func pruneCovered(in []readable) []readable {
	var out []readable
	for i, w := range in {
		covered := false
		for j, o := range in {
			switch {
			case i == j || !within(o.path, w.path):
			case o.path != w.path && o.tree:
				covered = true // strictly below a tree
			case o.path == w.path && (o.tree && !w.tree || o == w && j < i):
				covered = true // a literal under its own tree, or a duplicate
			}
		}
		if !covered {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// readableAlready: a is one of want, or inside one of its trees.
func readableAlready(want []readable, a string) bool {
	for _, w := range want {
		if w.path == a || w.tree && within(w.path, a) {
			return true
		}
	}
	return false
}

// ancestors are the directories strictly above each path, without "/",
// sorted and without duplicates.
func ancestors(paths []readable) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		for d := filepath.Dir(p.path); d != "/" && d != "."; d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	sort.Strings(out)
	return out
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	return dir == p || dir == "/" || strings.HasPrefix(p, dir+"/")
}
