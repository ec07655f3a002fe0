package selftest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// The cluster network checks (NET-40 … NET-42) run where the backend's
// sandboxes share a network with other workloads (backends.NetProber: a
// cluster's pod network), where "loopback only" is a NetworkPolicy the
// network plugin may or may not enforce. NET-01/03/10 are route lookups
// and pass in any pod with a route; these connect, in the main phase's
// sandbox, to targets that exist and answer: a listener pod the backend
// starts for the selftest (no policy of ours selects it), the API
// server's endpoint addresses and the cluster's DNS (a DNS query over
// UDP; the listener pod's UDP side where the cluster has no DNS service).
//
// The rule, for these checks only: a target was reached when its own
// answer (NetTarget.Expect: the listener's token, the API server's reply)
// arrived in the sandbox, and blocked when it did not AND the same
// connect from a pod no policy selects (the control, run as the role's
// plan is made) read it. Elsewhere the selftest counts a refused or
// timed-out connect as reached, since a refusal proves a route to a host
// that answers; on a pod network the policy controller's reject is
// itself a refusal (kube-router: ICMP port unreachable), so the answer
// must come from the target, and the control proves the target was
// there to answer. A control that did not read every target's answer
// leaves the check inconclusive, which fails the gate: never a pass.
func clusterChecks() []Check {
	return []Check{
		clusterCheck("NET-40", "reach another pod of the cluster (the selftest's listener pod)", "pod",
			"use a network plugin that enforces NetworkPolicy (the sandbox's deny-all), or a namespace whose policies do not let a selected pod out"),
		clusterCheck("NET-41", "reach the API server's endpoint address", "apiserver",
			"use a network plugin that enforces NetworkPolicy egress rules, also to the API server's endpoint addresses"),
		// Where the cluster has no DNS service the backend's target is a
		// stand-in, the listener pod's UDP side, and its What says so.
		clusterCheck("NET-42", "query a DNS server of the cluster", "dns",
			"use a network plugin that enforces NetworkPolicy egress rules for UDP too (cluster DNS)"),
	}
}

// clusterStepArg marks a cluster check's step: the host control runs no
// connect of it (the host may have no route to the pod network but its
// default one, off this machine); the control is a pod's (clusterNet).
const clusterStepArg = "cluster"

func clusterCheck(id, name, kind, fix string) Check {
	return Check{ID: id, Name: name, Category: "network", ClusterKind: kind,
		Steps: func(e *Env) []probe.Step {
			var steps []probe.Step
			for _, t := range e.Cluster.of(kind) {
				args := t.Args()
				args[clusterStepArg] = "true"
				steps = append(steps, step(id+"-"+t.ID, t.Op(), args, t.Addr))
			}
			return steps
		},
		Judge: func(e *Env, ev *Evidence) (bool, string) {
			targets := e.Cluster.of(kind)
			if len(targets) == 0 {
				// Blocked, with a control that saw nothing: inconclusive.
				return false, "the backend named no " + kind + " target"
			}
			if ev.Host {
				return e.Cluster.controlSaw(targets)
			}
			var said []string
			for _, t := range targets {
				o := ev.Obs[id+"-"+t.ID]
				if read := o.Values["read"]; strings.Contains(read, t.Expect) {
					return true, fmt.Sprintf("%s answered %q", t.What, clip(read))
				}
				said = append(said, t.What+": "+errnoEvidence(o))
			}
			return false, "no answer (" + strings.Join(said, "; ") + ")"
		},
		Fix: fix}
}

// clusterNet is the role's targets on the backend's shared network and
// what its control pod read from each.
type clusterNet struct {
	probe      backends.NetProbe
	targets    []backends.NetTarget
	control    map[string]string
	controlErr error
}

// clusterControlTries bounds the control: a listener pod that just
// started may not listen yet at the first connects.
const clusterControlTries = 15

// startClusterNet starts the backend's targets for p and runs the control
// once every target answers (or the tries run out): nil where the backend
// shares no network with other workloads.
func startClusterNet(ctx context.Context, b backends.Backend, p *policy.Policy) (*clusterNet, error) {
	np, ok := backends.NetProberOf(b)
	if !ok {
		return nil, nil
	}
	pr, err := np.NetTargets(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("the cluster network checks' targets: %w", err)
	}
	cn := &clusterNet{probe: pr, targets: pr.Targets()}
	for try := 0; try < clusterControlTries; try++ {
		cn.control, cn.controlErr = pr.Control(ctx)
		if cn.controlErr == nil {
			if ok, _ := cn.controlSaw(cn.targets); ok {
				break
			}
		}
		select {
		case <-ctx.Done():
			cn.close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return cn, nil
}

// of is the targets of kind (none without a cluster).
func (cn *clusterNet) of(kind string) []backends.NetTarget {
	if cn == nil {
		return nil
	}
	var out []backends.NetTarget
	for _, t := range cn.targets {
		if t.Kind == kind {
			out = append(out, t)
		}
	}
	return out
}

// controlSaw: the control read every target's own answer.
func (cn *clusterNet) controlSaw(targets []backends.NetTarget) (bool, string) {
	if cn.controlErr != nil {
		return false, "the control pod's connects did not run: " + cn.controlErr.Error()
	}
	var said []string
	all := true
	for _, t := range targets {
		read := cn.control[t.ID]
		ok := strings.Contains(read, t.Expect)
		all = all && ok
		if ok {
			said = append(said, t.What+" answered the control pod")
		} else {
			said = append(said, fmt.Sprintf("%s did not answer the control pod (read %q)", t.What, clip(read)))
		}
	}
	return all, strings.Join(said, "; ")
}

func (cn *clusterNet) close() {
	if cn != nil {
		_ = cn.probe.Close(context.Background())
	}
}

// clip shortens an answer for the report.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
