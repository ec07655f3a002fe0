package kubernetes

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/rendersum"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Summary implements backends.Artifact: read from the pod (its holder's
// volumes, resources, security context and environment), the init
// container's unpack spec (the copies of read-only directories), the
// copy's skipped paths (what it hides), the NetworkPolicy and the exec's
// supervisor spec (rlimits: a pod has none, the supervisor sets them).
func (a *Artifact) Summary() (backends.Rendered, error) {
	if a.Pod == nil || len(a.Pod.Spec.Containers) == 0 || a.Exec == nil {
		return backends.Rendered{}, fmt.Errorf("kubernetes: no pod and exec to summarise")
	}
	holder := a.Pod.Spec.Containers[0]
	hold, err := rendersum.Hold(holder.Command)
	if err != nil {
		return backends.Rendered{}, fmt.Errorf("kubernetes: the holder's spec: %w", err)
	}
	spec, err := rendersum.Exec(a.Exec.Command)
	if err != nil {
		return backends.Rendered{}, fmt.Errorf("kubernetes: the exec's spec: %w", err)
	}
	r := backends.Rendered{Rlimits: rendersum.Rlimits(spec.Rlimits), OwnNetwork: true, Network: policy.NetworkOutbound}
	for _, e := range holder.Env {
		r.Env = append(r.Env, e.Name)
	}
	if np := a.NetworkPolicy; np != nil && len(np.Spec.Ingress) == 0 && len(np.Spec.Egress) == 0 {
		r.Network = policy.NetworkLoopback
	}
	if sc := a.Pod.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil && sc.RunAsGroup != nil {
		r.UID, r.GID, r.Switched = int(*sc.RunAsUser), int(*sc.RunAsGroup), true
	}
	if m, ok := holder.Resources.Limits[corev1.ResourceMemory]; ok {
		r.Memory = m.Value()
	}
	if c, ok := holder.Resources.Limits[corev1.ResourceCPU]; ok {
		r.CPUs = float64(c.MilliValue()) / 1000
	}
	// The node's podPidsLimit, which the start demands at most this.
	r.Pids = a.NodePidsAtMost
	copies, err := a.copies()
	if err != nil {
		return backends.Rendered{}, err
	}
	var tmpfs []string
	for _, m := range holder.VolumeMounts {
		if !m.ReadOnly {
			tmpfs = append(tmpfs, m.MountPath)
		}
	}
	for _, c := range copies {
		// A discard copy is writable in the pod; its writes never reach
		// the host, which the copy came from: read-only as a mount.
		r.Mounts = append(r.Mounts, backends.RenderedMount{Path: c.Path, Tree: c.Kind == stage.KindDir})
	}
	r.Mounts = append(r.Mounts, rendersum.Staged(hold.Stage, tmpfs)...)
	if a.Copy != nil {
		r.Masked = append(r.Masked, a.Copy.Skip...)
	}
	return r, nil
}

// copies are the paths the init container unpacks (none without it).
func (a *Artifact) copies() ([]stage.Path, error) {
	for _, c := range a.Pod.Spec.InitContainers {
		if c.Name != unpackContainer {
			continue
		}
		if len(c.Command) < 3 {
			return nil, fmt.Errorf("kubernetes: the unpack container's command %q has no spec", c.Command)
		}
		u, err := protocol.DecodeUnpack(c.Command[2:])
		if err != nil {
			return nil, fmt.Errorf("kubernetes: the unpack spec: %w", err)
		}
		return u.Paths, nil
	}
	return nil, nil
}
