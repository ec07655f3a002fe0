package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// ownerSelector selects every object of ours.
var ownerSelector = profiles.LabelOwner + "=triage-sandbox"

// Sweep implements backends.Backend: it deletes the pods and
// NetworkPolicies of ours whose owner on this host is gone (or its pid was
// reused) and those whose lifetime passed, in every namespace the client
// may list (else the configured one). It selects by label only and judges
// by the owner annotations, never by names, and never touches a live
// owner's sandbox.
func (b *Backend) Sweep(ctx context.Context) ([]string, error) {
	if _, err := b.client(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ns := metav1.NamespaceAll
	pods, err := b.cli.listPods(ctx, ns, ownerSelector)
	if apierrors.IsForbidden(err) {
		ns = b.namespace(nil)
		pods, err = b.cli.listPods(ctx, ns, ownerSelector)
	}
	if err != nil {
		return nil, fmt.Errorf("listing triage-sandbox pods: %w", err)
	}
	nps, err := b.cli.listNetworkPolicies(ctx, ns, ownerSelector)
	if err != nil {
		return nil, fmt.Errorf("listing triage-sandbox NetworkPolicies: %w", err)
	}
	now := time.Now()
	// The agent-sandbox claims first: their pods go before the
	// NetworkPolicies beside them.
	removed, err := b.sweepClaimed(ctx, ns, now)
	errs := []error{err}
	for _, p := range pods.Items {
		if !stale(p.Annotations, b.host, now) {
			continue
		}
		if err := b.cli.deletePod(ctx, p.Namespace, p.Name); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		removed = append(removed, "pod/"+p.Namespace+"/"+p.Name)
	}
	for _, np := range nps.Items {
		if !stale(np.Annotations, b.host, now) {
			continue
		}
		if err := b.cli.deleteNetworkPolicy(ctx, np.Namespace, np.Name); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting NetworkPolicy %s/%s: %w", np.Namespace, np.Name, err))
			continue
		}
		removed = append(removed, "networkpolicy/"+np.Namespace+"/"+np.Name)
	}
	return removed, errors.Join(errs...)
}

// stale decides from an object's owner annotations whether its owner is
// gone: its lifetime passed, or its owner on this host is no longer the
// process that made it.
func stale(a map[string]string, host string, now time.Time) bool {
	if exp, err := time.Parse(time.RFC3339, a[profiles.LabelExpiresAt]); err == nil && now.After(exp) {
		return true
	}
	if a[profiles.LabelParentHost] != host {
		return false // another machine's run: only its expiry can tell
	}
	pid, err := strconv.Atoi(a[profiles.LabelParentPID])
	if err != nil || pid <= 0 {
		return false
	}
	return !ownership.OwnerAlive(pid, a[profiles.LabelParentBoot])
}
