package policy

import (
	"path/filepath"
	"strings"
)

// HostPath is one writable path the layer that starts a run must make
// exist on the host before the sandbox starts (a missing path is created,
// never skipped). The policy only decides it; package hostprep does it,
// through descriptors, so that a sandbox that can write near the path (a
// concurrent run) cannot redirect the create or the grant.
type HostPath struct {
	// Path is the writable path; Base and Rel the walk to it, one
	// component at a time from Base with no symlink followed: the
	// workspace root when Path is inside it (Build keeps writable paths
	// there), / for a policy made otherwise (a test weakening one).
	Path, Base, Rel string
	// File: a regular file, not a directory.
	File bool
	// Grant: the sandbox writes the host's path itself (it is not a
	// staged copy), so UID:GID must be able to write it; where it cannot
	// (root ran us on a root-owned workspace) it gets a POSIX ACL entry,
	// ownership and mode left alone.
	Grant    bool
	UID, GID int
}

// HostPreparation is what must be prepared on the host before p's sandbox
// starts: each writable mount, in the policy's order. None for allow_all.
func (p *Policy) HostPreparation() []HostPath {
	if p.AllowAll {
		return nil
	}
	var out []HostPath
	for _, m := range p.Mounts {
		if m.ReadOnly {
			continue
		}
		base := p.WorkspaceRoot
		rel, err := filepath.Rel(base, m.Path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			base, rel = "/", strings.TrimPrefix(m.Path, "/")
		}
		out = append(out, HostPath{Path: m.Path, Base: base, Rel: rel, File: m.Kind == "file",
			Grant: !p.Staged(), UID: p.User.UID, GID: p.User.GID})
	}
	return out
}
