package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// sweepDefer bounds how long a sweep lets starts in flight go first.
const sweepDefer = 5 * time.Second

// Sweep removes triage-sandbox containers left behind: those whose owning
// process on this host is gone (or its pid was reused) and those whose
// lifetime has passed. It matches on labels only, never on names, and never
// touches a live run's sandbox.
func (b *Backend) Sweep(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The API version negotiated by the ping a start beside shares, not
	// by a ping of the list's own ahead of the start's.
	if err := b.Available(ctx); err != nil {
		return nil, err
	}
	// After the container of a start beside has started (its sweep runs
	// during its command and its Close waits for it), bounded: a host of
	// many sandboxes starting one after another still sweeps.
	b.starts.settled(sweepDefer)
	list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", profiles.LabelOwner+"=triage-sandbox"),
	})
	if err != nil {
		return nil, fmt.Errorf("listing triage-sandbox containers: %w", err)
	}
	var removed []string
	var errs []error
	now := time.Now()
	for _, c := range list.Items {
		// A dead container (the daemon's removal of it failed half-way,
		// as when its own restart races a remove) runs nothing and is no
		// live run's: it goes whoever its owner is.
		if c.State != container.StateDead && !stale(c.Labels, b.host, now) {
			continue
		}
		if err := b.remove(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", shortID(c.ID), err))
			continue
		}
		removed = append(removed, c.ID)
	}
	// The daemon's overlay volumes (daemonOverlay) of those sandboxes, once
	// their containers are gone.
	gone, err := b.sweepVolumes(ctx, now)
	removed = append(removed, gone...)
	errs = append(errs, err)
	if os.Geteuid() == 0 {
		// Overlays whose owner died (kill -9) with or after its container.
		gone, err := overlay.Sweep(overlayRoot)
		removed = append(removed, gone...)
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// stale decides from a container's labels whether its owner is gone.
func stale(labels map[string]string, host string, now time.Time) bool {
	if exp, err := time.Parse(time.RFC3339, labels[profiles.LabelExpiresAt]); err == nil && now.After(exp) {
		return true
	}
	if labels[profiles.LabelParentHost] != host {
		return false // another machine's run: only its expiry can tell
	}
	pid, err := strconv.Atoi(labels[profiles.LabelParentPID])
	if err != nil || pid <= 0 {
		return false
	}
	return !processAlive(pid, labels[profiles.LabelParentBoot])
}

// processAlive: pid exists and, when known, started when the label says
// (a reused pid is a different process).
func processAlive(pid int, start string) bool {
	now := ownership.ProcessStart(pid)
	return now != "" && (start == "" || now == start)
}

// sweepVolumes removes the volumes of daemonOverlays whose owner is gone,
// the overlays first (an upper layer's volume is in use while its overlay
// is mounted).
func (b *Backend) sweepVolumes(ctx context.Context, now time.Time) ([]string, error) {
	list, err := b.cli.VolumeList(ctx, client.VolumeListOptions{
		Filters: make(client.Filters).Add("label", profiles.LabelOwner+"=triage-sandbox"),
	})
	if err != nil {
		return nil, fmt.Errorf("listing triage-sandbox volumes: %w", err)
	}
	var overlays, uppers []string
	for _, v := range list.Items {
		if !stale(v.Labels, b.host, now) {
			continue
		}
		if v.Options["type"] == "overlay" {
			overlays = append(overlays, v.Name)
		} else {
			uppers = append(uppers, v.Name)
		}
	}
	var removed []string
	var errs []error
	for _, name := range append(overlays, uppers...) {
		if _, err := b.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", name, err))
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}
