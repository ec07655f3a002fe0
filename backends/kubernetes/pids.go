package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// The start-time proof of pids_limit: a pod spec has no process limit;
// the kubelet's podPidsLimit (KubeletConfiguration) caps the pids cgroup
// of every pod on its node. Once the sandbox's pod is scheduled, the
// backend reads the node's effective kubelet configuration through the API
// server (GET /api/v1/nodes/NODE/proxy/configz: the user needs get on
// nodes/proxy) and lets the start on only when podPidsLimit is set and at
// most the policy's pids; a lower limit is said once (the sandbox's
// processes stop there). Unset, larger, unapplied (cgroupsPerQOS off) or
// unreadable refuses, naming the
// node, what it found and accept_weaker = ["pids_limit"] as the way out.
// Accepting pids_limit skips the read, said once
// (profiles.ProvenAtStart reports it weakened).

// nodePidsTTL is how long a node's podPidsLimit, once read, stands in
// this process: a kubelet's configuration changes with a restart of it,
// rarely; as proofTTL, ten minutes bounds how long a start trusts a limit
// since removed, and costs one read per node per ten minutes.
const nodePidsTTL = 10 * time.Minute

// nodePids caches the podPidsLimit read per API server and node, and
// which one-line notices were said.
type nodePids struct {
	mu   sync.Mutex
	now  func() time.Time
	by   map[string]nodePidsEntry
	said map[string]bool
}

type nodePidsEntry struct {
	limit int64
	read  time.Time
}

func newNodePids(now func() time.Time) *nodePids {
	return &nodePids{now: now, by: map[string]nodePidsEntry{}, said: map[string]bool{}}
}

// get returns key's limit, read by read unless read within nodePidsTTL; a
// failed read is not kept.
func (c *nodePids) get(key string, read func() (int64, error)) (int64, error) {
	c.mu.Lock()
	e, ok := c.by[key]
	c.mu.Unlock()
	if ok && c.now().Sub(e.read) < nodePidsTTL {
		return e.limit, nil
	}
	limit, err := read()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.by[key] = nodePidsEntry{limit: limit, read: c.now()}
	c.mu.Unlock()
	return limit, nil
}

// once reports whether the notice key is yet to be said.
func (c *nodePids) once(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := !c.said[key]
	c.said[key] = true
	return first
}

// pidsDemanded is the podPidsLimit a node must have at most for p's
// pod (0: none is checked).
func pidsDemanded(p *policy.Policy) int64 {
	if p.AllowAll || p.Limits.Pids <= 0 || slices.Contains(p.Accepted, profiles.CapPidsLimit) {
		return 0
	}
	return p.Limits.Pids
}

// provePids is Start's pids check for p's pod, scheduled on node under
// runtime rt; it returns the node's podPidsLimit as read (0: not read).
//
// Under gVisor (rt.PidsCountThreads) the sandbox's process limit is
// gVisor's RLIMIT_NPROC, which its kernel enforces (execRlimits), and the
// node's podPidsLimit counts gVisor's host tasks, about two per sandbox
// task: the limit must be set (the host's bound), may be above pids, and
// the RLIMIT_NPROC is lowered to fit it (runtimes.GVisorFit), said once
// when that is below the policy's pids. It is read then even where
// pids_limit is accepted (best effort): without the fit a fork past the
// node's limit would end the whole sandbox.
func (b *Backend) provePids(ctx context.Context, p *policy.Policy, node string, rt runtimes.Traits) (int64, error) {
	if p.AllowAll || p.Limits.Pids <= 0 {
		return 0, nil
	}
	key := b.cfg.Host + "\x00" + node
	read := func() (int64, error) {
		return b.nodePids.get(key, func() (int64, error) {
			ctx, cancel := context.WithTimeout(ctx, pingTimeout)
			defer cancel()
			return b.cli.podPidsLimit(ctx, node)
		})
	}
	if pidsDemanded(p) == 0 {
		if b.nodePids.once("accepted\x00" + key) {
			fmt.Fprintf(b.notices(), "triage-sandbox: kubernetes: pids_limit accepted ([sandbox] accept_weaker): not checking the podPidsLimit of node %s\n", node)
		}
		if rt.PidsCountThreads {
			limit, _ := read()
			return limit, nil
		}
		return 0, nil
	}
	limit, err := read()
	if err != nil {
		return 0, err
	}
	stop, err := judgePids(node, limit, p.Limits.Pids, rt.PidsCountThreads)
	if err != nil {
		return 0, err
	}
	if rt.PidsCountThreads {
		if nproc, _, ok := runtimes.GVisorLimits(rt, p); ok {
			stop = min(p.Limits.Pids, runtimes.GVisorFit(nproc, limit))
		}
	}
	if stop < p.Limits.Pids && b.nodePids.once(fmt.Sprintf("lower\x00%s\x00%d\x00%d", key, stop, p.Limits.Pids)) {
		fmt.Fprintf(b.notices(), "triage-sandbox: kubernetes: node %s's podPidsLimit is %d, below the policy's pids %d: the sandbox's processes stop at %d\n", node, limit, p.Limits.Pids, stop)
	}
	return limit, nil
}

// judgePids: node's podPidsLimit (<= 0: none) holds the policy's pids,
// and where the sandbox's processes stop (the limit, or pids: under
// gVisor the limit bounds gVisor's host tasks and may be larger), or why
// not.
func judgePids(node string, limit, pids int64, userSpaceKernel bool) (stop int64, err error) {
	const out = `or accept the weaker mode with [sandbox] accept_weaker = ["pids_limit"]`
	switch {
	case limit <= 0:
		return 0, fmt.Errorf("kubernetes: node %s sets no podPidsLimit (its kubelet's configuration): a pod there has no process-count limit; set the kubelet's podPidsLimit to at most %d (the policy's pids), %s", node, pids, out)
	case userSpaceKernel:
		return pids, nil
	case limit > pids:
		return 0, fmt.Errorf("kubernetes: node %s's podPidsLimit is %d, above the policy's pids %d; lower the kubelet's podPidsLimit to at most %d, raise [sandbox] pids to %d, %s", node, limit, pids, pids, limit, out)
	}
	return limit, nil
}

// podPidsLimit reads node's effective podPidsLimit from its kubelet's
// configz through the API server's node proxy (-1 or absent: none).
func (a *api) podPidsLimit(ctx context.Context, node string) (int64, error) {
	raw, err := a.core.Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
	if apierrors.IsForbidden(err) {
		return 0, fmt.Errorf(`kubernetes: cannot read node %s's kubelet configuration (its podPidsLimit): forbidden: the user needs get on nodes/proxy (a ClusterRole); grant it, or accept the weaker mode with [sandbox] accept_weaker = ["pids_limit"]`, node)
	}
	if err != nil {
		return 0, fmt.Errorf(`kubernetes: cannot read node %s's kubelet configuration (GET /api/v1/nodes/%s/proxy/configz): %v; accept the weaker mode with [sandbox] accept_weaker = ["pids_limit"] if the node's podPidsLimit cannot be read`, node, node, err)
	}
	return parsePodPidsLimit(node, raw)
}

// parsePodPidsLimit reads podPidsLimit from a configz answer; an answer
// that is not one refuses (it would say nothing of the limit). A kubelet
// with cgroupsPerQOS off makes no pod cgroup, the only place it sets
// podPidsLimit (its pod container manager is then a no-op): the limit it
// reports reaches no pod, so that refuses too.
func parsePodPidsLimit(node string, raw []byte) (int64, error) {
	var cz struct {
		Kubelet *struct {
			PodPidsLimit  *int64 `json:"podPidsLimit"`
			CgroupsPerQOS *bool  `json:"cgroupsPerQOS"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &cz); err != nil || cz.Kubelet == nil {
		return 0, fmt.Errorf(`kubernetes: node %s's configz is not a kubelet configuration (%.80q); accept the weaker mode with [sandbox] accept_weaker = ["pids_limit"] if the node's podPidsLimit cannot be read`, node, raw)
	}
	if cz.Kubelet.PodPidsLimit == nil || *cz.Kubelet.PodPidsLimit <= 0 {
		return -1, nil
	}
	if q := cz.Kubelet.CgroupsPerQOS; q != nil && !*q {
		return 0, fmt.Errorf(`kubernetes: node %s's kubelet runs with cgroupsPerQOS: false, so its podPidsLimit (%d) reaches no pod (it is set on pod cgroups only); turn cgroupsPerQOS on, or accept the weaker mode with [sandbox] accept_weaker = ["pids_limit"]`, node, *cz.Kubelet.PodPidsLimit)
	}
	return *cz.Kubelet.PodPidsLimit, nil
}

// awaitScheduled waits until the sandbox's pod has a node, or says why it
// never will.
func (s *sandbox) awaitScheduled(ctx context.Context) (string, error) {
	if s.r.Pod.Spec.NodeName != "" {
		return s.r.Pod.Spec.NodeName, nil
	}
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		pod, err := s.b.cli.getPod(ctx, s.r.Pod.Namespace, s.r.Pod.Name)
		if err != nil {
			return "", fmt.Errorf("waiting for the sandbox's pod: %w", err)
		}
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		if pod.Status.Phase == corev1.PodFailed {
			return "", fmt.Errorf("the sandbox's pod ended before it was scheduled: %s %s", pod.Status.Reason, pod.Status.Message)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the sandbox's pod %s was not scheduled: %w (is a node there to run it?)", s.r.Pod.Name, ctx.Err())
		case <-time.After(wait):
		}
	}
}
