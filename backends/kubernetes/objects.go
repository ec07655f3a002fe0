package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// create makes the sandbox's objects: the NetworkPolicy before the pod,
// so the pod never runs without it.
func (b *Backend) create(ctx context.Context, r *Rendered) error {
	if np := r.NetworkPolicy; np != nil {
		if err := b.cli.createNetworkPolicy(ctx, np); err != nil {
			return fmt.Errorf("creating the sandbox's NetworkPolicy %s/%s: %w", np.Namespace, np.Name, err)
		}
	}
	if err := b.cli.createPod(ctx, r.Pod); err != nil {
		return fmt.Errorf("creating the sandbox's pod %s/%s: %w", r.Pod.Namespace, r.Pod.Name, refusal(err))
	}
	return nil
}

// refusal turns an admission refusal into the API server's own words.
func refusal(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) && apierrors.IsForbidden(err) {
		return fmt.Errorf("the cluster refused it: %s", st.Status().Message)
	}
	return err
}

// remove deletes the pod (no grace: its holder's lifeline is already cut,
// and a node that never runs it must not keep it), then its
// NetworkPolicy, each waited for until the API server no longer has it.
func (b *Backend) remove(ctx context.Context, r *Rendered) error {
	if r.claim != nil {
		return b.removeClaimed(ctx, r)
	}
	ctx, cancel := context.WithTimeout(ctx, goneTimeout)
	defer cancel()
	ns := r.Pod.Namespace
	err := deleteAndWait(ctx, "pod", r.Pod.Name,
		func(ctx context.Context) error { return b.cli.deletePod(ctx, ns, r.Pod.Name) },
		func(ctx context.Context) error { _, err := b.cli.getPod(ctx, ns, r.Pod.Name); return err })
	if np := r.NetworkPolicy; np != nil {
		err = errors.Join(err, deleteAndWait(ctx, "NetworkPolicy", np.Name,
			func(ctx context.Context) error { return b.cli.deleteNetworkPolicy(ctx, np.Namespace, np.Name) },
			func(ctx context.Context) error { return b.cli.getNetworkPolicy(ctx, np.Namespace, np.Name) }))
	}
	return err
}

// deleteAndWait deletes an object and polls get until it is not found.
func deleteAndWait(ctx context.Context, kind, name string, del, get func(context.Context) error) error {
	if err := del(ctx); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", kind, name, err)
	}
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s still there: %w", kind, name, ctx.Err())
		case <-time.After(wait):
		}
	}
}
