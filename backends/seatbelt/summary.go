package seatbelt

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/rendersum"
)

// Summary implements backends.Artifact: what the profile's rules allow
// (recorded by each phase as it wrote them), the supervisor's environment
// and the rlimits it sets on itself. A profile's allows add up: a
// read-only path under a writable tree is writable, and is summarised so.
// Rules name canonical paths (/private/tmp); a path the policy spells
// otherwise (/tmp) is summarised at its spelling too, as what covers its
// canonical path. No namespace, no limit, no identity switch: the command
// runs as the caller on the host's network.
func (a *Artifact) Summary() (backends.Rendered, error) {
	r := a.rendered
	r.Mounts = slices.Clone(r.Mounts)
	r.Masked = slices.Clone(r.Masked)
	var writable []string
	for _, m := range r.Mounts {
		if m.Writable && m.Tree {
			writable = append(writable, m.Path)
		}
	}
	for i, m := range r.Mounts {
		if !m.Writable && rendersum.Covered(m.Path, writable) {
			r.Mounts[i].Writable = true
		}
	}
	for spelling, canonical := range a.spelled {
		if m, ok := covering(canonical, r.Mounts); ok {
			m.Path, m.Tree = spelling, m.Tree || m.Path != canonical
			r.Mounts = append(r.Mounts, m)
		}
		if rendersum.Covered(canonical, a.rendered.Masked) {
			r.Masked = append(r.Masked, spelling)
		}
	}
	r.Env = backends.EnvNames(a.Env)
	r.Rlimits = rendersum.Rlimits(a.Rlimits)
	return r, nil
}

// covering is the rule that decides path: the deepest that covers it, a
// writable one where two are alike deep.
func covering(path string, ms []backends.RenderedMount) (backends.RenderedMount, bool) {
	best, depth := backends.RenderedMount{}, -1
	for _, m := range ms {
		if m.Path != path && !(m.Tree && strings.HasPrefix(path, strings.TrimSuffix(m.Path, "/")+"/")) {
			continue
		}
		if d := strings.Count(filepath.Clean(m.Path), "/"); d > depth || d == depth && m.Writable {
			best, depth = m, d
		}
	}
	return best, depth >= 0
}
