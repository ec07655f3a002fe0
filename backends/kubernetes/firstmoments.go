package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// A sandbox pod's first moments: a policy controller programs a new pod's
// rules only after the pod runs (kube-router on its next sync), so the
// deny-all NetworkPolicy, created before the pod, may not hold yet when
// the holder is ready, and the first command could reach the network.
// Before Start hands out a loopback-only sandbox, the backend therefore
// connects from the sandbox's own pod (an exec of the image's binary, in
// the holder's container, before any command) to the API server's
// endpoints that answered the start-time proof's control pod, and waits
// until none answers; one still answering after firstBound refuses the
// start.
//
// The check lives in the backend, beside the proof: it is no policy
// decision (the policy said loopback only, and the backend knows it
// rendered that as a deny-all that the cluster applies late); only the
// backend knows when its pod runs and can run something in it before the
// command; and the targets are the proof's, known to answer a pod no
// policy selects, so "no answer" means the policy holds, not that nothing
// was there. Judged by the target's answer, as the proof's control is.
const (
	// firstBound is how long a new pod may take to come under its policy
	// (the proof allows as long: proofSettle).
	firstBound = proofSettle
	firstRetry = 200 * time.Millisecond
)

// awaitDenied returns once the sandbox pod r of p reaches none of the
// proven targets, or refuses.
func (b *Backend) awaitDenied(ctx context.Context, p *policy.Policy, r *Rendered) error {
	if p.Network.Mode != policy.NetworkLoopback || p.AllowAll || r.NetworkPolicy == nil ||
		slices.Contains(p.Accepted, profiles.CapOwnLoopback) || b.skipFirstMoments {
		return nil
	}
	ns := r.Pod.Namespace
	targets := b.proofs.answers(b.cfg.Host + "\x00" + ns)
	if len(targets) == 0 {
		return fmt.Errorf("kubernetes: no target of the network check to confirm that the sandbox's pod %s is under its NetworkPolicy; accept it with [sandbox] accept_weaker = [\"own_loopback\"]", r.Pod.Name)
	}
	var plan protocol.ProbePlan
	for _, t := range targets {
		plan.Steps = append(plan.Steps, tokenStep(t))
	}
	end := time.Now().Add(firstBound)
	for {
		obs, err := b.execProbe(ctx, ns, r.Pod.Name, plan)
		if err != nil {
			return fmt.Errorf("kubernetes: confirming that the sandbox's pod is under its NetworkPolicy: %w", err)
		}
		i := slices.IndexFunc(targets, func(t target) bool { return strings.Contains(obs[t.id].Values["read"], t.expect) })
		if i < 0 {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("kubernetes: the sandbox's pod %s still reached %s %s after it started: its deny-all NetworkPolicy did not apply; check the cluster's network plugin, or accept it with [sandbox] accept_weaker = [\"own_loopback\"]", r.Pod.Name, targets[i].what, firstBound)
		}
		if err := sleep(ctx, firstRetry); err != nil {
			return err
		}
	}
}
