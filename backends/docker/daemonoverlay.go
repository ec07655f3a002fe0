package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Without root on the host (a user in the docker group), triage-sandbox
// cannot mount the checkout's overlay itself, but the daemon mounts
// volumes as root: a daemonOverlay is the same overlay made of two local
// volumes the daemon mounts.
//
//   - the upper layer: a tmpfs volume bounded like a host-made one (size,
//     nr_inodes, nosuid, nodev, mode 0700, owned by the sandbox's ids);
//   - the overlay: a volume of type overlay whose lower layer is the host
//     checkout (the kernel never writes a lower layer) and whose upper and
//     work directories are in that tmpfs, nosuid and nodev, bound where the
//     read-only checkout would be.
//
// The daemon mounts a volume when a container that uses it starts, and in
// no order between a container's volumes, and a fresh tmpfs has no upper
// and work directories. So a keeper container (the sandbox's image, as
// the sandbox's ids, no capabilities, no network, its root read-only)
// holds the tmpfs mounted and makes the two directories, then the sandbox
// starts with the overlay volume, and the keeper goes: the mounted overlay
// holds the tmpfs from then on (its own private mount of the upper layer),
// and both go when the sandbox's container is gone and the volumes are
// removed. The sandbox's container is unchanged: no capability, mount or
// seccomp rule is added for this. Every object carries the sandbox's
// labels, so the sweep removes what a killed run left.
type daemonOverlay struct {
	b       *Backend
	volumes []string // removed in this order: overlays first
	keeper  string   // the keeper container's id while it runs
	// released is the keeper's removal under way (release), nil before.
	released chan error
}

// keeperLayer is where the keeper mounts the tmpfs volume.
const keeperLayer = "/layer"

// keeperLifetime bounds the keeper's life when its owner dies before
// removing it (the sweep also removes it by its labels).
const keeperLifetime = 300

// daemonOverlays makes a daemonOverlay for each discard mount of p and
// binds it in req where the read-only checkout was. On error nothing of it
// is left.
func (b *Backend) daemonOverlays(ctx context.Context, req *CreateRequest, p *policy.Policy) (d *daemonOverlay, err error) {
	d = &daemonOverlay{b: b}
	defer func() {
		if err != nil {
			_ = d.remove(context.WithoutCancel(ctx))
			d = nil
		}
	}()
	labels := maps.Clone(req.Config.Labels)
	// layer is one discard mount's: its upper layer's volume, where the
	// daemon mounts that, and the host directory.
	type layer struct{ upper, mountpoint, lower string }
	var layers []layer
	var uppers []string
	for i, m := range p.Mounts {
		if !overlay.Discarded(m) {
			continue
		}
		if err := overlay.CheckLower(m.Path); err != nil {
			return nil, err
		}
		name := req.Name + "-upper" + strconv.Itoa(i)
		vol, err := b.cli.VolumeCreate(ctx, client.VolumeCreateOptions{
			Name: name, Driver: "local", Labels: labels,
			DriverOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": fmt.Sprintf(
				"size=%d,nr_inodes=%d,mode=0700,uid=%d,gid=%d,nosuid,nodev",
				max(p.Limits.WritableSize, 1<<20), max(p.Limits.WritableInodes, 1024), p.User.UID, p.User.GID)},
		})
		if err != nil {
			return nil, fmt.Errorf("the upper layer's volume: %w", err)
		}
		d.volumes = append(d.volumes, name)
		layers = append(layers, layer{name, vol.Volume.Mountpoint, m.Path})
		uppers = append(uppers, name)
	}
	if len(layers) == 0 {
		return d, nil
	}
	if err := d.keep(ctx, req, p, labels, layers[0].lower, uppers); err != nil {
		return nil, err
	}
	for i, l := range layers {
		mp := l.mountpoint
		name := req.Name + "-overlay" + strconv.Itoa(i)
		opts := "lowerdir=" + l.lower + ",upperdir=" + mp + "/upper,workdir=" + mp + "/work,nosuid,nodev"
		if mp == "" {
			return nil, errors.New("the daemon gave the upper layer's volume no mount point")
		}
		if err := overlay.CheckLower(mp); err != nil {
			return nil, fmt.Errorf("the daemon's volume directory %s: %w", mp, err)
		}
		if _, err := b.cli.VolumeCreate(ctx, client.VolumeCreateOptions{
			Name: name, Driver: "local", Labels: labels,
			DriverOpts: map[string]string{"type": "overlay", "device": "overlay", "o": opts},
		}); err != nil {
			return nil, fmt.Errorf("the overlay's volume: %w", err)
		}
		d.volumes = append([]string{name}, d.volumes...)
		bound := false
		for j, bm := range req.HostConfig.Mounts {
			if bm.Type == mount.TypeBind && bm.Source == l.lower && bm.Target == l.lower {
				req.HostConfig.Mounts[j] = mount.Mount{Type: mount.TypeVolume, Source: name, Target: l.lower,
					VolumeOptions: &mount.VolumeOptions{NoCopy: true}}
				bound = true
			}
		}
		if !bound {
			return nil, fmt.Errorf("%s is not bound in the sandbox", l.lower)
		}
	}
	return d, nil
}

// keep starts the keeper with every upper layer's volume mounted at
// keeperLayer/N, makes each one's upper directory (with the mode of the
// lower directory's root, first's for all: one checkout in practice) and
// work directory, and returns once they exist.
func (d *daemonOverlay) keep(ctx context.Context, req *CreateRequest, p *policy.Policy, labels map[string]string, lower string, uppers []string) error {
	mode := os.FileMode(0o755)
	if fi, err := os.Stat(lower); err == nil {
		mode = fi.Mode().Perm()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != p.User.UID {
			// The upper root is the sandbox's: it may do there what the
			// host lets others do, not what the checkout's owner may.
			mode = mode&^0o700 | (mode&0o007)<<6
		}
	}
	script := ""
	var mounts []mount.Mount
	for i, u := range uppers {
		dir := keeperLayer + "/" + strconv.Itoa(i)
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: u, Target: dir, VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
		script += fmt.Sprintf("mkdir %[1]s/upper %[1]s/work && chmod %04[2]o %[1]s/upper && ", dir, uint32(mode))
	}
	script += "echo > " + keeperLayer + "/0/ready && exec sleep " + strconv.Itoa(keeperLifetime)
	keeperLabels := maps.Clone(labels)
	keeperLabels[profiles.LabelRole] = "overlay-keeper"
	pids := int64(4)
	created, err := d.b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: req.Name + "-keeper",
		Config: &container.Config{
			User: strconv.Itoa(p.User.UID) + ":" + strconv.Itoa(p.User.GID), Image: req.Config.Image,
			Entrypoint: []string{}, Cmd: []string{"/bin/sh", "-c", script}, Labels: keeperLabels,
			WorkingDir: "/",
		},
		HostConfig: &container.HostConfig{
			NetworkMode: "none", AutoRemove: true, CapDrop: []string{"ALL"}, SecurityOpt: securityOpt(),
			ReadonlyRootfs: true, Mounts: mounts, LogConfig: container.LogConfig{Type: "none"},
			Resources: container.Resources{Memory: 64 << 20, PidsLimit: &pids},
		},
	})
	if err != nil {
		return fmt.Errorf("the upper layer's keeper: %w", err)
	}
	d.keeper = created.ID
	if _, err := d.b.cli.ContainerStart(ctx, d.keeper, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("starting the upper layer's keeper: %w", err)
	}
	// The keeper writes "ready" after the directories: wait for it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := d.b.cli.ContainerStatPath(ctx, d.keeper, client.ContainerStatPathOptions{Path: keeperLayer + "/0/ready"}); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the upper layer's keeper made no directories in 20s (its image %s needs /bin/sh, mkdir, chmod and sleep): %w", req.Config.Image, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// started: the sandbox's container holds the overlays mounted, so the
// keeper goes.
func (d *daemonOverlay) started(ctx context.Context) error {
	if d == nil || d.keeper == "" {
		return nil
	}
	err := d.b.remove(ctx, d.keeper)
	if err == nil {
		d.keeper = ""
	}
	return err
}

// release removes the keeper in the background once the sandbox holds
// the overlay (its removal is a round trip the command need not wait
// for); remove waits for it.
func (d *daemonOverlay) release(ctx context.Context) {
	if d == nil || d.released != nil {
		return
	}
	d.released = make(chan error, 1)
	go func() { d.released <- d.started(ctx) }()
}

// remove removes the keeper and the volumes, once the sandbox's container
// is gone. It is idempotent.
func (d *daemonOverlay) remove(ctx context.Context) error {
	if d == nil {
		return nil
	}
	var errs []error
	if d.released != nil {
		if err := <-d.released; err != nil {
			errs = append(errs, err)
		}
		d.released = make(chan error, 1)
		d.released <- nil
	}
	if err := d.started(ctx); err != nil {
		errs = append(errs, err)
	}
	var left []string
	for _, v := range d.volumes {
		if _, err := d.b.cli.VolumeRemove(ctx, v, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", v, err))
			left = append(left, v)
		}
	}
	d.volumes = left
	return errors.Join(errs...)
}

// daemonFallback: where the host could not make the checkout's overlay
// (warning says why: no root), a Docker daemon makes it (daemonOverlays);
// it returns the warning that stays ("" when the daemon made it). Podman
// is left out: a rootless Podman mounts volumes in a user namespace of the
// caller's, untested here, so its checkout stays read-only as it was.
func (b *Backend) daemonFallback(ctx context.Context, req *CreateRequest, p *policy.Policy, warning string) (*daemonOverlay, string) {
	if warning == "" || os.Geteuid() == 0 || !overlay.Wanted(p) {
		return nil, warning
	}
	eng, err := b.Engine(ctx)
	if err != nil || eng.IsPodman() {
		return nil, warning
	}
	endOverlay := phase.Begin(ctx, "start.overlay")
	defer endOverlay()
	d, err := b.daemonOverlays(ctx, req, p)
	if err != nil {
		return nil, "the project checkout is read-only in this sandbox, so writes under it fail: the Docker daemon could not make its overlay: " + err.Error() +
			" ([sandbox] checkout_writes = \"refuse\" says read-only is meant)"
	}
	return d, ""
}
