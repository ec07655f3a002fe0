package docker

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// TestNoSuidVolumesMadeOrRefused: the shared volumes of system
// directories, asked about at once, are made with their nosuid options
// when missing, and one of such a name with other options (here a plain
// writable bind, set-id bits kept) refuses the start with the command that
// fixes it, whichever of the request's volumes it is.
func TestNoSuidVolumesMadeOrRefused(t *testing.T) {
	testenv.RequireDocker(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatal(err)
	}
	b := &Backend{cli: cli}
	good, bad := t.TempDir(), t.TempDir()
	for _, d := range []string{good, bad} {
		name := NoSuidVolume(d)
		t.Cleanup(func() { _, _ = cli.VolumeRemove(context.Background(), name, client.VolumeRemoveOptions{Force: true}) })
	}
	req := func(dirs ...string) *CreateRequest {
		r := &CreateRequest{}
		r.HostConfig = hostConfigWith(dirs)
		return r
	}
	if err := b.ensureNoSuidVolumes(ctx, req(good)); err != nil {
		t.Fatalf("a missing volume: %v", err)
	}
	v, err := cli.VolumeInspect(ctx, NoSuidVolume(good), client.VolumeInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(v.Volume.Options, nosuidOptions(good)) {
		t.Fatalf("the volume made for %s has options %v, want %v", good, v.Volume.Options, nosuidOptions(good))
	}
	if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: NoSuidVolume(bad), Driver: "local",
		DriverOpts: map[string]string{"type": "none", "device": bad, "o": "bind"}}); err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]string{{good, bad}, {bad, good}} {
		err := b.ensureNoSuidVolumes(ctx, req(order...))
		if err == nil || !strings.Contains(err.Error(), "docker volume rm "+NoSuidVolume(bad)) {
			t.Fatalf("volumes %v with %s's not nosuid: %v; want it refused", order, bad, err)
		}
	}
}

// hostConfigWith mounts each of dirs as its nosuid volume.
func hostConfigWith(dirs []string) *container.HostConfig {
	h := &container.HostConfig{}
	for _, d := range dirs {
		h.Mounts = append(h.Mounts, mount.Mount{Type: mount.TypeVolume, Source: NoSuidVolume(d), Target: d})
	}
	return h
}
