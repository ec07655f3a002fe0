package docker_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestWatcherRemovesTheContainerOfADeadOwner: the host's watcher removes a
// container whose owner died, whatever runs inside (here a plain sleep
// that no lifeline reaches); with the owner alive it leaves it alone (the
// control: the owner removes its own containers), and it leaves it alone
// too when the owner said it removed it before it exited. The watcher is
// the small inside binary (which waits, then execs the CLI's to remove) or,
// when that one cannot be used, the CLI's own.
func TestWatcherRemovesTheContainerOfADeadOwner(t *testing.T) {
	testenv.RequireDocker(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatal(err)
	}
	cliBin, insideBin := testenv.Binary(t), testenv.InsideBinary(t)
	for _, tc := range []struct {
		watcher                          string
		ownerDies, saysRemoved, wantGone bool
	}{
		{watcher: insideBin, ownerDies: false, wantGone: false},
		{watcher: insideBin, ownerDies: true, wantGone: true},
		// An owner that said it removed the container and then exited:
		// the watcher leaves the daemon alone (here the container is still
		// there, so a remove would show).
		{watcher: insideBin, ownerDies: true, saysRemoved: true, wantGone: false},
		{watcher: cliBin, ownerDies: true, wantGone: true},
	} {
		ownerDies := tc.ownerDies
		created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{Image: "triage-sandbox:latest", Cmd: []string{"sleep", "300"}, Entrypoint: []string{},
				Labels: map[string]string{profiles.LabelOwner: "triage-sandbox-test"}},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatal(err)
		}
		id := created.ID
		t.Cleanup(func() { _, _ = cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}) })
		if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		owner := exec.Command("sleep", "60")
		if err := owner.Start(); err != nil {
			t.Fatal(err)
		}
		argv := protocol.MustArgv(tc.watcher, protocol.EntryWatch, protocol.Watch{Container: id,
			Owner: owner.Process.Pid, OwnerStart: ownership.ProcessStart(owner.Process.Pid), Remover: cliBin})
		watcher := exec.Command(argv[0], argv[1:]...)
		lifeline, err := watcher.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := watcher.Start(); err != nil {
			t.Fatal(err)
		}
		if ownerDies {
			_ = owner.Process.Kill()
			_ = owner.Wait()
		}
		if tc.saysRemoved {
			if _, err := lifeline.Write([]byte{docker.RemovedWord}); err != nil {
				t.Fatal(err)
			}
		}
		_ = lifeline.Close()
		done := make(chan error, 1)
		go func() { done <- watcher.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("owner dies %v: the watcher: %v", ownerDies, err)
			}
		case <-time.After(60 * time.Second):
			_ = watcher.Process.Kill()
			t.Fatalf("owner dies %v: the watcher did not end", ownerDies)
		}
		_, err = cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		gone := err != nil
		if gone != tc.wantGone {
			t.Errorf("%+v: container gone %v (%v)", tc, gone, err)
		}
		if !ownerDies {
			_ = owner.Process.Kill()
			_ = owner.Wait()
		}
	}
}
