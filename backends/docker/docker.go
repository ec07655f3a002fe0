package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Name is the backend's registry name.
const Name = "docker"

// killGrace is how long SIGTERM gets before SIGKILL when a run times out.
const killGrace = time.Second

// setupTimeout bounds create, attach and start together.
const setupTimeout = 60 * time.Second

// pingTimeout bounds every "is the daemon there" question.
const pingTimeout = 5 * time.Second

// Backend runs commands in single-use hardened containers.
type Backend struct {
	cli     *client.Client
	selfExe string
	host    string
	// Adjust, when set, edits each create request before it is sent. Only
	// tests use it, to weaken a container and prove the selftest notices.
	Adjust func(*CreateRequest)
}

// New connects (lazily) to the daemon named by DOCKER_HOST or the default socket.
func New(env backends.Env) (backends.Backend, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	host, _ := os.Hostname()
	return &Backend{cli: cli, selfExe: env.SelfExe, host: host}, nil
}

// Name implements backends.Backend.
func (b *Backend) Name() string { return Name }

// SelfPath implements backends.Backend: the binary is mounted at InitPath.
func (b *Backend) SelfPath() string { return InitPath }

// Describe implements backends.Backend.
func (b *Backend) Describe(ctx context.Context, p *policy.Policy) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	out := map[string]string{"image": p.Image}
	if v, err := b.cli.ServerVersion(ctx, client.ServerVersionOptions{}); err == nil {
		out["engine"] = v.Version
		out["api"] = b.cli.ClientVersion()
		for _, c := range v.Components {
			if c.Name == "Engine" && c.Details["KernelVersion"] != "" {
				out["kernel"] = c.Details["KernelVersion"]
			}
		}
	}
	if img, err := b.cli.ImageInspect(ctx, p.Image); err == nil {
		out["image_id"] = img.ID
	}
	return out
}

// Client exposes the SDK client for the selftest and gc.
func (b *Backend) Client() *client.Client { return b.cli }

// Available checks the daemon answers (negotiating the API version).
func (b *Backend) Available(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := b.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("cannot reach the Docker daemon at %s: %v; start it (systemctl start docker, or dockerd &) or set DOCKER_HOST",
			b.cli.DaemonHost(), err)
	}
	return nil
}

// Ready implements backends.Backend.
func (b *Backend) Ready(ctx context.Context, p *policy.Policy) error {
	if err := b.Available(ctx); err != nil {
		return err
	}
	return b.EnsureImage(ctx, p.Image)
}

// EnsureImage fails with the exact build command when the image is missing.
func (b *Backend) EnsureImage(ctx context.Context, image string) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	_, err := b.cli.ImageInspect(ctx, image)
	if err == nil {
		return nil
	}
	if cerrdefs.IsNotFound(err) {
		if image == profiles.DefaultImage {
			return fmt.Errorf("docker image %s not found; build it with `triage-sandbox image build` (offline: images/build-base.sh first, then `triage-sandbox image build --base %s`)",
				image, profiles.DefaultBaseImage)
		}
		return fmt.Errorf("docker image %s not found; build or load it, or set [sandbox] image", image)
	}
	return fmt.Errorf("inspecting image %s: %w", image, err)
}

// Render implements backends.Backend with placeholder run data.
func (b *Backend) Render(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
	return Render(p, cmd, b.selfExe, b.runInfo(p, cmd))
}

func (b *Backend) runInfo(p *policy.Policy, cmd backends.Command) RunInfo {
	var id [6]byte
	_, _ = rand.Read(id[:])
	pid := os.Getpid()
	return RunInfo{
		Name:        "triage-sandbox-" + p.Role + "-" + hex.EncodeToString(id[:]),
		ParentPID:   pid,
		ParentStart: parentStart(pid),
		Host:        b.host,
		ExpiresAt:   time.Now().Add(max(p.Timeout(), cmd.Timeout) + time.Minute),
		Lifeline:    cmd.Stdin == nil,
	}
}

// Run creates, attaches, starts and waits for one container, and removes it
// on every path. The timeout runs from the start; cancelling ctx (Ctrl-C)
// kills the container too.
func (b *Backend) Run(ctx context.Context, p *policy.Policy, cmd backends.Command, out backends.Streams) (res backends.Result, runErr error) {
	if b.selfExe == "" {
		return res, errors.New("docker backend: no triage-sandbox binary to mount as init")
	}
	if err := b.Ready(ctx, p); err != nil {
		return res, err
	}
	// Best effort, off the critical path: clear what crashed runs left.
	go func() { _, _ = b.Sweep(context.WithoutCancel(ctx)) }()
	req, err := Render(p, cmd, b.selfExe, b.runInfo(p, cmd))
	if err != nil {
		return res, err
	}
	if b.Adjust != nil {
		b.Adjust(req)
	}
	// Cleanup must outlive ctx (it is often the cancelled one), and set-up
	// is not interrupted half-way: a create cancelled in flight could leave a
	// container whose id we never learn. Ctrl-C is honoured right after.
	cleanupCtx := context.WithoutCancel(ctx)
	setupCtx, cancelSetup := context.WithTimeout(cleanupCtx, setupTimeout)
	defer cancelSetup()

	created, err := b.cli.ContainerCreate(setupCtx, client.ContainerCreateOptions{
		Name: req.Name, Config: req.Config, HostConfig: req.HostConfig,
	})
	if err != nil {
		return res, b.stageErr(cleanupCtx, "creating the sandbox container", err)
	}
	id := created.ID
	res.Sandbox = id
	defer func() {
		// When the daemon is gone the error already says what happens next;
		// a second line about the removal would only repeat it.
		if err := b.remove(cleanupCtx, id); err != nil && runErr == nil {
			fmt.Fprintf(os.Stderr, "triage-sandbox: warning: removing container %s: %v (run `triage-sandbox gc`)\n", id[:12], err)
		}
	}()

	att, err := b.cli.ContainerAttach(setupCtx, id, client.ContainerAttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		return res, b.stageErr(cleanupCtx, "attaching to the sandbox", err)
	}
	defer att.Close()

	// Wait before start: with AutoRemove the container may be gone before a
	// later wait could see its exit.
	waitCtx, stopWait := context.WithCancel(cleanupCtx)
	defer stopWait()
	wait := b.cli.ContainerWait(waitCtx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	oom := b.watchOOM(waitCtx, id)

	var copyDone sync.WaitGroup
	copyDone.Add(1)
	go func() {
		defer copyDone.Done()
		_, _ = stdcopy.StdCopy(orDiscard(out.Stdout), orDiscard(out.Stderr), att.Reader)
	}()
	if cmd.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, cmd.Stdin)
			_ = att.CloseWrite()
		}()
	}

	start := time.Now()
	if _, err := b.cli.ContainerStart(setupCtx, id, client.ContainerStartOptions{}); err != nil {
		return res, b.stageErr(cleanupCtx, "starting the sandbox container", err)
	}

	var deadline <-chan time.Time
	if cmd.Timeout > 0 {
		timer := time.NewTimer(cmd.Timeout)
		defer timer.Stop()
		deadline = timer.C
	}
	var status container.WaitResponse
	select {
	case status = <-wait.Result:
	case err := <-wait.Error:
		return res, daemonLost(err)
	case <-deadline:
		res.TimedOut = true
		b.kill(cleanupCtx, id, wait)
		status.StatusCode = 137
	case <-ctx.Done():
		res.Canceled = true
		b.kill(cleanupCtx, id, wait)
		status.StatusCode = 130
	}
	res.Duration = time.Since(start)
	// The daemon ends the output stream once stdin is closed too.
	_ = att.CloseWrite()
	// The stream ends when the container's stdout/stderr close; bound the
	// wait in case a daemon keeps the hijacked connection open.
	if !waitTimeout(&copyDone, 5*time.Second) {
		att.Close()
		copyDone.Wait()
	}
	res.ExitCode = int(status.StatusCode)
	if res.ExitCode > 128 && !res.TimedOut && !res.Canceled {
		// A daemon shutting down kills its containers: say so rather than
		// pass the signal off as the command's own doing.
		pctx, cancel := context.WithTimeout(cleanupCtx, time.Second)
		_, perr := b.cli.Ping(pctx, client.PingOptions{})
		cancel()
		if perr != nil {
			return res, fmt.Errorf("the Docker daemon stopped during the run and killed the sandbox (exit %d); the result is unknown, run it again once the daemon is back", res.ExitCode)
		}
	}
	if res.ExitCode == 137 && !res.TimedOut && !res.Canceled {
		// The oom event can trail the exit by a moment.
		select {
		case res.OOMKilled = <-oom:
		case <-time.After(time.Second):
		}
	}
	stopWait()
	if res.ExitCode > 128 && res.ExitCode < 160 {
		res.Signal = res.ExitCode - 128
	}
	return res, nil
}

// kill stops a timed-out or cancelled container: SIGTERM to tini (which
// forwards it), then SIGKILL, which ends the pid namespace and every process
// in it, setsid'd or not.
func (b *Backend) kill(ctx context.Context, id string, wait client.ContainerWaitResult) {
	_, _ = b.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "TERM"})
	select {
	case <-wait.Result:
		return
	case <-wait.Error:
	case <-time.After(killGrace):
	}
	kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, _ = b.cli.ContainerKill(kctx, id, client.ContainerKillOptions{Signal: "KILL"})
	select {
	case <-wait.Result:
	case <-wait.Error:
	case <-kctx.Done():
	}
}

// remove force-removes the container; "not found" means AutoRemove won.
func (b *Backend) remove(ctx context.Context, id string) error {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := b.cli.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !isRemovalInProgress(err) {
		return err
	}
	return nil
}

// stageErr explains a failed set-up step; when the daemon no longer
// answers, it says so rather than show a transport error.
func (b *Backend) stageErr(ctx context.Context, stage string, err error) error {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, perr := b.cli.Ping(pctx, client.PingOptions{}); perr != nil {
		return fmt.Errorf("lost the Docker daemon while %s (%v); once it is back it removes the sandbox, or run `triage-sandbox gc`", stage, err)
	}
	return fmt.Errorf("%s: %w", stage, err)
}

// daemonLost explains a wait that broke off: the daemon died or restarted.
func daemonLost(err error) error {
	return fmt.Errorf("lost the Docker daemon during the run (%v); the result is unknown. Once the daemon is back it stops and removes the sandbox; `triage-sandbox gc` removes anything left", err)
}

func isRemovalInProgress(err error) bool {
	return strings.Contains(err.Error(), "is already in progress")
}

// watchOOM reports whether the daemon saw an OOM kill in the container
// before ctx ends. Exit code 137 alone cannot tell OOM from SIGKILL.
func (b *Backend) watchOOM(ctx context.Context, id string) <-chan bool {
	res := make(chan bool, 1)
	ev := b.cli.Events(ctx, client.EventsListOptions{
		Filters: make(client.Filters).Add("container", id).Add("event", "oom"),
	})
	go func() {
		select {
		case _, ok := <-ev.Messages:
			if ok {
				res <- true
			}
		case <-ev.Err:
		case <-ctx.Done():
		}
	}()
	return res
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
