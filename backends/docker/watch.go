package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// A container's lifeline (the holder's stdin, closed by the daemon when
// its owner dies) ends inside the container. The watcher is the host's
// own: a process of ours, in a session of its own, whose stdin is a pipe
// from the owner. When the owner dies (even by kill -9) the pipe closes
// and the watcher removes the container, whatever runs inside it.

// watcherLine is the owner's end of its watcher's lifeline.
type watcherLine struct{ w io.WriteCloser }

// removed tells the watcher the container is gone and ends it: an owner
// that exits right after its close would otherwise look dead to it, and
// it would ask the daemon to remove what is no longer there.
func (l watcherLine) removed() error {
	_, _ = l.w.Write([]byte{ownership.RemovedWord})
	return l.w.Close()
}

// Close ends the watcher without a word: it removes the container if the
// owner is gone by then.
func (l watcherLine) Close() error { return l.w.Close() }

// startWatcher starts the watcher of container id; what it returns ends
// the watcher.
func (b *Backend) startWatcher(id string) (watcherLine, error) {
	pid := os.Getpid()
	// The small binary waits; the CLI's, with the Docker client, is
	// started only to remove.
	exe := b.insideExe
	if exe == "" {
		exe = b.selfExe
	}
	argv, err := protocol.Argv(exe, protocol.EntryWatch,
		protocol.Watch{Container: id, Owner: pid, OwnerStart: ownership.ProcessStart(pid), Remover: b.selfExe})
	if err != nil {
		return watcherLine{}, err
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
		return watcherLine{}, fmt.Errorf("starting the container's watcher: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return watcherLine{lifeline}, nil
}

// RemoveOrphan is the watcher's remover, which the watcher (package
// inside, in the small binary) execs once the owner died without saying
// it removed the container: it removes the container.
func RemoveOrphan(ctx context.Context, spec protocol.Watch, errOut io.Writer) int {
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
