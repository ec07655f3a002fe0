package docker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/mount"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/rendersum"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Summary implements backends.Artifact: read from the create request (the
// mounts, network, limits, masks) and the exec request (the command's
// environment, identity and rlimits: the supervisor sets the ulimits the
// container gives it, and those the exec's spec carries).
func (a *Artifact) Summary() (backends.Rendered, error) {
	if a.Create == nil || a.Create.Config == nil || a.Create.HostConfig == nil {
		return backends.Rendered{}, fmt.Errorf("docker: no create request to summarise")
	}
	cfg, hc := a.Create.Config, a.Create.HostConfig
	hold, err := rendersum.Hold(cfg.Cmd)
	if err != nil {
		return backends.Rendered{}, fmt.Errorf("docker: the holder's spec: %w", err)
	}
	spec, err := rendersum.Exec(a.Exec.Cmd)
	if err != nil {
		return backends.Rendered{}, fmt.Errorf("docker: the exec's spec: %w", err)
	}
	r := backends.Rendered{Env: backends.EnvNames(a.Exec.Env), Memory: hc.Memory, CPUs: float64(hc.NanoCPUs) / 1e9,
		Masked: append([]string(nil), hc.MaskedPaths...)}
	if hc.PidsLimit != nil {
		r.Pids = *hc.PidsLimit
	}
	if r.UID, r.GID, err = rendersum.Identity(a.Exec.User, spec.RunAs); err != nil {
		return backends.Rendered{}, fmt.Errorf("docker: the exec's identity: %w", err)
	}
	r.Switched = true
	egressBound := false
	for _, m := range hc.Mounts {
		switch {
		case m.Target == launch.InitPath:
		case m.Target == launch.EgressDir:
			egressBound = m.ReadOnly
		case m.Type == mount.TypeVolume && m.Source == NoSuidVolume(m.Target):
			// A system directory's shared volume: the options Start
			// creates it with (and refuses one that has others).
			ro := slices.Contains(strings.Split(nosuidOptions(m.Target)["o"], ","), "ro")
			r.Mounts = append(r.Mounts, backends.RenderedMount{Path: m.Target, Writable: !ro, Tree: true})
		case m.Type == mount.TypeBind && m.Source == "/dev/null", m.Type == mount.TypeTmpfs:
			r.Masked = append(r.Masked, m.Target) // a mask where the runtime drops MaskedPaths
		default:
			r.Mounts = append(r.Mounts, backends.RenderedMount{Path: m.Target, Writable: !m.ReadOnly, Tree: true})
		}
	}
	var tmpfs []string
	for dir := range hc.Tmpfs {
		tmpfs = append(tmpfs, dir)
	}
	r.Mounts = append(r.Mounts, rendersum.Staged(hold.Stage, tmpfs)...)
	switch hc.NetworkMode {
	case "none":
		r.Network, r.OwnNetwork = rendersum.Network(hold, egressBound), true
	case "bridge", "default", "":
		r.Network, r.OwnNetwork = policy.NetworkOutbound, true
	default:
		r.Network = policy.NetworkMode(hc.NetworkMode)
	}
	for _, u := range hc.Ulimits {
		r.Rlimits = append(r.Rlimits, backends.RenderedRlimit{Name: strings.ToUpper(u.Name), Soft: uint64(u.Soft), Hard: uint64(u.Hard)})
	}
	return r, nil
}
