package oci

import (
	"fmt"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/rendersum"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Summary implements backends.Artifact: read from config.json (mounts,
// namespaces, resources, masks) and its exec process (the command's
// environment, identity and rlimits: runc exec takes the exec process's
// own, not the container's).
func (s Spec) Summary() (backends.Rendered, error) {
	if s.Spec == nil || s.Process == nil || s.Linux == nil {
		return backends.Rendered{}, fmt.Errorf("oci: no spec to summarise")
	}
	x, err := ExecProcess(s)
	if err != nil {
		return backends.Rendered{}, fmt.Errorf("oci: %w", err)
	}
	hold, err := rendersum.Hold(s.Process.Args)
	if err != nil {
		return backends.Rendered{}, fmt.Errorf("oci: the holder's spec: %w", err)
	}
	spec, err := rendersum.Exec(x.Args)
	if err != nil {
		return backends.Rendered{}, fmt.Errorf("oci: the exec's spec: %w", err)
	}
	r := backends.Rendered{Env: backends.EnvNames(x.Env), UID: int(x.User.UID), GID: int(x.User.GID), Switched: true,
		Masked: append([]string(nil), s.Linux.MaskedPaths...)}
	if spec.RunAs != nil {
		r.UID, r.GID = spec.RunAs.UID, spec.RunAs.GID
	}
	summariseResources(&r, s.Linux.Resources)
	for _, l := range x.Rlimits {
		r.Rlimits = append(r.Rlimits, backends.RenderedRlimit{Name: strings.TrimPrefix(l.Type, "RLIMIT_"), Soft: l.Soft, Hard: l.Hard})
	}
	tmpfs, egressBound := summariseMounts(&r, s.Mounts)
	r.Mounts = append(r.Mounts, rendersum.Staged(hold.Stage, tmpfs)...)
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace && ns.Path == "" {
			r.OwnNetwork = true
			r.Network = rendersum.Network(hold, egressBound)
		}
	}
	if r.Network == "" {
		r.Network = policy.NetworkHost
	}
	return r, nil
}

func summariseResources(r *backends.Rendered, res *specs.LinuxResources) {
	if res == nil {
		return
	}
	if res.Memory != nil && res.Memory.Limit != nil {
		r.Memory = *res.Memory.Limit
	}
	if res.Pids != nil && res.Pids.Limit != nil {
		r.Pids = *res.Pids.Limit
	}
	if c := res.CPU; c != nil && c.Quota != nil && c.Period != nil && *c.Period > 0 {
		r.CPUs = float64(*c.Quota) / float64(*c.Period)
	}
}

// summariseMounts adds the bind mounts and masks to r and returns the
// tmpfs mounts (where staged paths may land) and whether the proxy's
// socket directory is bound read-only.
func summariseMounts(r *backends.Rendered, ms []specs.Mount) (tmpfs []string, egressBound bool) {
	for _, m := range ms {
		ro := slices.Contains(m.Options, "ro")
		switch {
		case m.Destination == launch.InitPath, m.Destination == "/etc/hosts":
		case m.Destination == launch.EgressDir:
			egressBound = ro
		case m.Type == "bind" && m.Source == MaskFile, m.Type == "tmpfs" && ro:
			r.Masked = append(r.Masked, m.Destination) // a mask where the runtime drops MaskedPaths
		case m.Type == "tmpfs":
			tmpfs = append(tmpfs, m.Destination)
		case m.Type == "bind":
			r.Mounts = append(r.Mounts, backends.RenderedMount{Path: m.Destination, Writable: !ro, Tree: true})
		}
	}
	return tmpfs, egressBound
}
