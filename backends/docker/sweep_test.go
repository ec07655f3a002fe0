package docker

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func TestStale(t *testing.T) {
	self := os.Getpid()
	selfStart := ownership.ProcessStart(self)
	now := time.Now()
	future := now.Add(time.Hour).Format(time.RFC3339)
	past := now.Add(-time.Minute).Format(time.RFC3339)
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"live owner here", map[string]string{profiles.LabelParentHost: "h", profiles.LabelParentPID: strconv.Itoa(self), profiles.LabelParentBoot: selfStart, profiles.LabelExpiresAt: future}, false},
		{"pid reused", map[string]string{profiles.LabelParentHost: "h", profiles.LabelParentPID: strconv.Itoa(self), profiles.LabelParentBoot: "1", profiles.LabelExpiresAt: future}, true},
		{"owner gone", map[string]string{profiles.LabelParentHost: "h", profiles.LabelParentPID: "999999999", profiles.LabelExpiresAt: future}, true},
		{"expired", map[string]string{profiles.LabelParentHost: "h", profiles.LabelParentPID: strconv.Itoa(self), profiles.LabelParentBoot: selfStart, profiles.LabelExpiresAt: past}, true},
		{"other host, not expired", map[string]string{profiles.LabelParentHost: "other", profiles.LabelParentPID: "999999999", profiles.LabelExpiresAt: future}, false},
		{"no labels", map[string]string{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stale(tt.labels, "h", now); got != tt.want {
				t.Errorf("stale = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSweepRemovesOnlyOrphans creates a never-started container owned by a
// dead process and one owned by this live test, then sweeps.
func TestSweepRemovesOnlyOrphans(t *testing.T) {
	testenv.RequireDocker(t)
	b, err := New(backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	d := b.(*Backend)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(pid int, start string) string {
		res, err := d.cli.ContainerCreate(context.Background(), client.ContainerCreateOptions{
			Config: &container.Config{Image: profiles.DefaultImage, Cmd: []string{"true"}, Labels: map[string]string{
				profiles.LabelOwner: "triage-sandbox", profiles.LabelParentHost: d.host,
				profiles.LabelParentPID: strconv.Itoa(pid), profiles.LabelParentBoot: start,
				profiles.LabelExpiresAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			}},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = d.cli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
		})
		return res.ID
	}
	orphan := mk(dead.Process.Pid, "")
	live := mk(os.Getpid(), ownership.ProcessStart(os.Getpid()))
	removed, err := d.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Another test's run may sweep the orphan first; only its absence counts.
	if slices.Contains(removed, live) {
		t.Fatalf("removed %v; orphan %s live %s", removed, orphan[:12], live[:12])
	}
	if _, err := d.cli.ContainerInspect(context.Background(), live, client.ContainerInspectOptions{}); err != nil {
		t.Fatalf("the live run's container was touched: %v", err)
	}
	if _, err := d.cli.ContainerInspect(context.Background(), orphan, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("orphan still there: %v", err)
	}
}

// TestSweepRemovesOrphanOverlayVolumes: a normal user's checkout overlay
// (daemonOverlay) left by a dead owner, a tmpfs volume and an overlay
// volume over it, mounted in a container the sweep removes first, goes
// with it; a live run's volume stays.
func TestSweepRemovesOrphanOverlayVolumes(t *testing.T) {
	testenv.RequireDocker(t)
	b, err := New(backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	d := b.(*Backend)
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	labels := func(pid int, start string) map[string]string {
		return map[string]string{
			profiles.LabelOwner: "triage-sandbox", profiles.LabelParentHost: d.host,
			profiles.LabelParentPID: strconv.Itoa(pid), profiles.LabelParentBoot: start,
			profiles.LabelExpiresAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		}
	}
	name := "triage-sandbox-sweeptest-" + strconv.Itoa(os.Getpid())
	lower := t.TempDir()
	mkvol := func(name string, l map[string]string, opts map[string]string) {
		if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Driver: "local", Labels: l, DriverOpts: opts}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = d.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true}) })
	}
	orphan := labels(dead.Process.Pid, "")
	mkvol(name+"-upper", orphan, map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=1m,nr_inodes=64,nosuid,nodev"})
	vol, err := d.cli.VolumeInspect(ctx, name+"-upper", client.VolumeInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mp := vol.Volume.Mountpoint
	mkvol(name+"-overlay", orphan, map[string]string{"type": "overlay", "device": "overlay",
		"o": "lowerdir=" + lower + ",upperdir=" + mp + "/upper,workdir=" + mp + "/work,nosuid,nodev"})
	mkvol(name+"-live", labels(os.Getpid(), ownership.ProcessStart(os.Getpid())), map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=1m"})
	// The dead run's keeper: its container holds the upper layer mounted.
	pids := int64(4)
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: profiles.DefaultImage, Entrypoint: []string{},
			Cmd: []string{"sh", "-c", "mkdir /layer/upper /layer/work && exec sleep 60"}, Labels: orphan},
		HostConfig: &container.HostConfig{NetworkMode: "none", CapDrop: []string{"ALL"}, Resources: container.Resources{PidsLimit: &pids},
			Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: name + "-upper", Target: "/layer"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = d.cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}) })
	if _, err := d.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{name + "-upper", name + "-overlay"} {
		if _, err := d.cli.VolumeInspect(ctx, v, client.VolumeInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Errorf("orphan volume %s still there: %v", v, err)
		}
	}
	if _, err := d.cli.VolumeInspect(ctx, name+"-live", client.VolumeInspectOptions{}); err != nil {
		t.Errorf("the live run's volume was touched: %v", err)
	}
}
