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
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// TestNoSuidVolumesMadeOrRefused: the shared volumes of system
// directories, asked about at once (with the start's first questions, or
// at the create), are made with their nosuid options when missing, and
// one of such a name with other options (here a plain writable bind,
// set-id bits kept) refuses the start with the command that fixes it,
// whichever of the request's volumes it is.
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
	for _, early := range []bool{false, true} {
		good, bad := t.TempDir(), t.TempDir()
		for _, d := range []string{good, bad} {
			name := NoSuidVolume(d)
			t.Cleanup(func() { _, _ = cli.VolumeRemove(context.Background(), name, client.VolumeRemoveOptions{Force: true}) })
		}
		ensure := func(dirs ...string) error {
			req := &CreateRequest{HostConfig: &container.HostConfig{}}
			p := &policy.Policy{}
			for _, d := range dirs {
				req.HostConfig.Mounts = append(req.HostConfig.Mounts, mount.Mount{Type: mount.TypeVolume, Source: NoSuidVolume(d), Target: d})
				p.Mounts = append(p.Mounts, policy.Mount{Path: d, ReadOnly: true, System: true, Kind: "dir"})
			}
			var pre volumeAnswers
			if early {
				pre = b.askVolumes(ctx, p)
				if len(pre) != len(dirs) {
					t.Fatalf("%d volume(s) asked about early, want %d", len(pre), len(dirs))
				}
			}
			return b.ensureNoSuidVolumes(ctx, req, pre)
		}
		if err := ensure(good); err != nil {
			t.Fatalf("early %v: a missing volume: %v", early, err)
		}
		v, err := cli.VolumeInspect(ctx, NoSuidVolume(good), client.VolumeInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(v.Volume.Options, nosuidOptions(good)) {
			t.Fatalf("early %v: the volume made for %s has options %v, want %v", early, good, v.Volume.Options, nosuidOptions(good))
		}
		if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: NoSuidVolume(bad), Driver: "local",
			DriverOpts: map[string]string{"type": "none", "device": bad, "o": "bind"}}); err != nil {
			t.Fatal(err)
		}
		for _, order := range [][]string{{good, bad}, {bad, good}} {
			err := ensure(order...)
			if err == nil || !strings.Contains(err.Error(), "docker volume rm "+NoSuidVolume(bad)) {
				t.Fatalf("early %v: volumes %v with %s's not nosuid: %v; want it refused", early, order, bad, err)
			}
		}
	}
}
