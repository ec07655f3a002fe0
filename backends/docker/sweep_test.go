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
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/ownership"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
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
