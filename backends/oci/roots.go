package oci

import (
	"context"
	"fmt"
	"sync"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends/oci/rootfs"
)

// CachedRoots gives image roots from the content-addressed cache,
// unpacking an image from the local Docker daemon on first use. The daemon
// is only asked which ID an image name has; runs never go through it.
type CachedRoots struct {
	Cache rootfs.Cache

	once sync.Once
	cli  *client.Client
	err  error
}

func (r *CachedRoots) client() (*client.Client, error) {
	r.once.Do(func() { r.cli, r.err = client.New(client.FromEnv) })
	return r.cli, r.err
}

// Root implements RootProvider: the root stays leased (safe from eviction)
// until release.
func (r *CachedRoots) Root(ctx context.Context, image string) (string, func(), error) {
	cli, err := r.client()
	if err != nil {
		return "", nil, fmt.Errorf("connecting to the Docker daemon to find image %q: %w", image, err)
	}
	lease, err := r.Cache.Acquire(ctx, cli, image)
	if err != nil {
		return "", nil, err
	}
	return lease.Root, func() { _ = lease.Close() }, nil
}

// RootWithID implements IDRoots.
func (r *CachedRoots) RootWithID(ctx context.Context, image string) (string, string, func(), error) {
	cli, err := r.client()
	if err != nil {
		return "", "", nil, fmt.Errorf("connecting to the Docker daemon to find image %q: %w", image, err)
	}
	lease, err := r.Cache.Acquire(ctx, cli, image)
	if err != nil {
		return "", "", nil, err
	}
	return lease.Root, lease.ID, func() { _ = lease.Close() }, nil
}

// RootOfID implements IDRoots: no daemon, the cache only.
func (r *CachedRoots) RootOfID(ctx context.Context, id string) (string, func(), error) {
	lease, err := r.Cache.AcquireID(ctx, id)
	if err != nil {
		return "", nil, err
	}
	return lease.Root, func() { _ = lease.Close() }, nil
}

// Check implements RootProvider: the image is known to the daemon (and so
// cached already or unpackable).
func (r *CachedRoots) Check(ctx context.Context, image string) error {
	cli, err := r.client()
	if err != nil {
		return fmt.Errorf("the oci backend finds images through the Docker daemon: %w", err)
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("image %q: %w (build it with `triage-sandbox image build`)", image, err)
	}
	return nil
}
