package local

import (
	"slices"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/rendersum"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Summary implements backends.Artifact: read from the confinement plan
// (binds, tmpfs, masks, identity, rlimits), the namespaces, the helper's
// environment and holder spec, and the cgroup Start makes.
func (a Artifact) Summary() (backends.Rendered, error) {
	pl := a.Plan
	r := backends.Rendered{Env: backends.EnvNames(a.Env), UID: pl.UID, GID: pl.GID, Switched: a.switched,
		OwnNetwork: slices.Contains(a.Namespaces, "network"), Network: policy.NetworkHost}
	egressBound := false
	for _, b := range pl.Binds {
		switch b.Dest() {
		case launch.InitPath:
		case launch.EgressDir:
			egressBound = !b.Write
		default:
			// A discarded bind's writes never reach the host: read-only.
			r.Mounts = append(r.Mounts, backends.RenderedMount{Path: b.Dest(), Writable: b.Write, Tree: true})
		}
	}
	var tmpfs []string
	for _, t := range pl.Tmpfs {
		if t.Target != ScratchPaths.Home && t.Target != ScratchPaths.Tmp {
			tmpfs = append(tmpfs, t.Target)
		}
	}
	r.Mounts = append(r.Mounts, rendersum.Staged(a.hold.Stage, tmpfs)...)
	for _, m := range pl.Masks {
		r.Masked = append(r.Masked, m.Path)
	}
	for _, l := range pl.Rlimits {
		r.Rlimits = append(r.Rlimits, backends.RenderedRlimit{Name: l.Name, Soft: l.Soft, Hard: l.Hard})
	}
	if r.OwnNetwork {
		r.Network = rendersum.Network(a.hold, egressBound)
	}
	if a.cgroup != nil {
		r.Memory, r.Pids, r.CPUs = a.cgroup.Memory, a.cgroup.Pids, a.cgroup.CPUs
	}
	return r, nil
}
