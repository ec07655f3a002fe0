package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends/ownership"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// A container's lifeline (the holder's stdin, closed by the daemon when
// its owner dies) ends inside the container. The watcher is the host's
// own: a process of ours, in a session of its own, whose stdin is a pipe
// from the owner. When the owner dies (even by kill -9) the pipe closes
// and the watcher removes the container, whatever runs inside it.

// startWatcher starts the watcher of container id; closing what it returns
// (after the container is removed) ends the watcher.
func (b *Backend) startWatcher(id string) (io.Closer, error) {
	pid := os.Getpid()
	argv, err := protocol.Argv(b.selfExe, protocol.EntryWatch,
		protocol.Watch{Container: id, Owner: pid, OwnerStart: ownership.ProcessStart(pid)})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	// Its own session: a Ctrl-C at the terminal, or a signal to the
	// owner's process group, does not end it before its work.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	lifeline, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("starting the container's watcher: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return lifeline, nil
}

// Watch is the watcher's entry point: it waits for its lifeline to close;
// then, if the owner is gone, it removes the container. An owner that is
// alive closed the lifeline itself after removing the container.
func Watch(ctx context.Context, spec protocol.Watch, lifeline io.Reader, errOut io.Writer) int {
	_, _ = io.Copy(io.Discard, lifeline)
	if ownership.OwnerAlive(spec.Owner, spec.OwnerStart) {
		return 0
	}
	cli, err := client.New(client.FromEnv)
	if err == nil {
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	}
	if err == nil {
		err = (&Backend{cli: cli}).remove(ctx, spec.Container)
	}
	if err != nil {
		fmt.Fprintf(errOut, "triage-sandbox: removing container %s after its owner died: %v (run `triage-sandbox gc`)\n", shortID(spec.Container), err)
		return 1
	}
	return 0
}
