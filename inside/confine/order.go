package confine

import (
	"slices"
	"strings"
)

// stepKind is what one step of building the tree does.
type stepKind int

const (
	stepBind stepKind = iota
	stepTmpfs
	stepDir
	stepSymlink
)

// step is one bind, tmpfs, directory or symlink of a plan: its kind, its
// index in the plan's list of that kind, and its path inside.
type step struct {
	kind  stepKind
	index int
	path  string
}

// buildOrder orders a plan's binds, tmpfs, directories and symlinks
// shallowest first, so a mount never hides one made before it at a deeper
// path (a tmpfs for HOME goes first, the checkout bound inside it next, its
// writable output dir inside that last). Steps at the same depth keep the
// plan's order, binds before tmpfs before directories before symlinks.
func buildOrder(p Plan) []step {
	var steps []step
	for i, b := range p.Binds {
		steps = append(steps, step{stepBind, i, b.Dest()})
	}
	for i, t := range p.Tmpfs {
		steps = append(steps, step{stepTmpfs, i, t.Target})
	}
	for i, d := range p.Dirs {
		steps = append(steps, step{stepDir, i, d.Path})
	}
	for i, s := range p.Symlinks {
		steps = append(steps, step{stepSymlink, i, s.Path})
	}
	slices.SortStableFunc(steps, func(a, b step) int { return depth(a.path) - depth(b.path) })
	return steps
}

// depth counts a clean absolute path's components.
func depth(p string) int { return strings.Count(p, "/") }
