package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holder"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/staging"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// afterKillWait bounds how long a command may take to end once its tree
// was told to die, and how long the daemon's word on a container's end may
// trail the end of a command.
const afterKillWait = holderexec.AfterKillWait

// sandbox is a started holder container that takes commands by exec.
type sandbox struct {
	// Base keeps what the holder printed (its lifetime's end) and its
	// Gone, closed when the container stopped.
	*holder.Base
	b  *Backend
	p  *policy.Policy
	rt runtimes.Traits
	id string
	// name is the container's name, listed with the watcher from before
	// its create until its id is (create, watch); "" when it has none.
	name string
	// att is the holder's attach stream; its stdin is the lifeline.
	att        client.HijackedResponse
	stopWatch  context.CancelFunc
	exitStatus int64
	waitErr    error
	oomEvents  atomic.Int64
	// outsideKill is set when the daemon records a SIGKILL of the
	// container that the host did not send (docker stop, docker kill, the
	// daemon's shutdown): its own record of a stop from outside.
	outsideKill atomic.Bool
	// started: the container was started (only Start sets it, before
	// the sandbox is shared).
	started bool
	// killed: the host killed the whole container (a tree that would not
	// end); nothing can be copied back from it.
	killed atomic.Bool

	// ctl starts commands through the holder when it dialled the control
	// socket bound into its container; nil means docker exec. ctlReady is
	// closed once that is decided.
	ctl      *control.Client
	ctlReady chan struct{}
	// listed: the container is on the host's watcher's list (watch.go),
	// taken off once it is removed.
	listed bool

	// ov is the overlays of the checkout's discarded writes (nil: none).
	ov *overlay.Set
	// dov is those overlays when the daemon mounted them (nil: none).
	dov *daemonOverlay
}

// start creates, attaches to and starts the holder. ctx is not cancelled
// by Ctrl-C (the caller strips that), so set-up is never cut half-way.
// confirm runs between the create and the start, beside the attach: an
// error removes the container unstarted and is returned as it is.
func (b *Backend) start(ctx context.Context, p *policy.Policy, rt runtimes.Traits, req *CreateRequest, ln *control.Listener, opts backends.StartOptions, ov *overlay.Set, confirm func(id string) error) (backends.Sandbox, error) {
	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	s, err := b.create(ctx, setupCtx, p, rt, req, ln, ov)
	if err != nil {
		return nil, err
	}
	w := s.watch(ctx, confirm)
	if err := s.attach(ctx, setupCtx, w); err != nil {
		return nil, err
	}
	wait := <-w.waiting
	<-w.oomWatched
	// Nothing starts in the container before its watcher runs: a kill -9
	// from here on leaves it to the watcher, as when the watcher started
	// before the attach.
	if err := <-w.watcherUp; err != nil {
		<-w.confirmed
		s.closeListener(ln)
		_ = s.Close(ctx)
		return nil, err
	}
	if err := s.confirmAndStart(ctx, setupCtx, w.confirmed, ln); err != nil {
		return nil, err
	}
	s.started = true
	defer phase.Begin(ctx, "start.holder-ready")()
	if ln != nil {
		go s.awaitControl(ctx, ln)
	}
	go s.awaitExit(wait)
	if err := s.Ready(setupCtx, opts); err != nil {
		return nil, s.fail(ctx, "starting the sandbox container", err)
	}
	return s, nil
}

// create makes the holder's container and its sandbox; nothing runs in it
// yet, and it is listed with the watcher that removes it when its owner
// dies beside the attach (startWatches).
func (b *Backend) create(ctx, setupCtx context.Context, p *policy.Policy, rt runtimes.Traits, req *CreateRequest, ln *control.Listener, ov *overlay.Set) (*sandbox, error) {
	// Listed by name before it is asked for: an owner killed between the
	// create and its id's listing (startWatches) leaves nothing either.
	if req.Name != "" {
		if err := b.watcherOf().List(req.Name); err != nil {
			if ln != nil {
				_ = ln.Close()
			}
			return nil, err
		}
	}
	endCreate := phase.Begin(ctx, "start.create")
	created, err := b.cli.ContainerCreate(setupCtx, client.ContainerCreateOptions{
		Name: req.Name, Config: req.Config, HostConfig: req.HostConfig,
	})
	if err != nil {
		if req.Name != "" {
			_ = b.watcherOf().Removed(req.Name)
		}
		if ln != nil {
			_ = ln.Close()
		}
		return nil, b.stageErr(ctx, "creating the sandbox container", err)
	}
	endCreate()
	s := b.newSandbox(p, rt, created.ID, ov)
	s.name = req.Name
	if ln == nil {
		close(s.ctlReady)
	}
	return s, nil
}

// newSandbox is the sandbox of container id, its holder base set up.
func (b *Backend) newSandbox(p *policy.Policy, rt runtimes.Traits, id string, ov *overlay.Set) *sandbox {
	s := &sandbox{b: b, p: p, rt: rt, id: id, ctlReady: make(chan struct{}), ov: ov}
	s.Base = holder.New(p, holder.Config{Setup: setupTimeout, NoReadyWaitUnstaged: true,
		Ended: func() error {
			return fmt.Errorf("the sandbox ended before its writable paths were in place (exit %d)", s.exitStatus)
		},
		StageErr: func(ctx context.Context, err error) error {
			return b.stageErr(ctx, "copying the writable paths into the sandbox", err)
		}})
	return s
}

// startWatches are the answers of the round trips that go before the
// start, at once.
type startWatches struct {
	confirmed  chan error
	waiting    chan client.ContainerWaitResult
	oomWatched chan struct{}
	// watcherUp: the container is listed with the watcher that removes it
	// when its owner dies (s.listed set), or why not. Read before the
	// container starts and before any Close.
	watcherUp chan error
}

// watch asks, each a round trip of its own and none waiting for another,
// which runtime the container got, waits for its exit (with AutoRemove the
// container may be gone before a later wait could see it) and subscribes
// to its OOM events; and lists the container with its owner's watcher
// (whose first start took a cold run 7 to 11 ms in series before).
func (s *sandbox) watch(ctx context.Context, confirm func(id string) error) startWatches {
	w := startWatches{confirmed: make(chan error, 1), waiting: make(chan client.ContainerWaitResult, 1), oomWatched: make(chan struct{}),
		watcherUp: make(chan error, 1)}
	go func() {
		endWatcher := phase.Begin(ctx, "start.watcher")
		err := s.b.watcherOf().List(s.id)
		endWatcher()
		if err == nil {
			s.listed = true
		}
		w.watcherUp <- err
		if err == nil && s.name != "" {
			// Listed by its id now: the name's listing (create) is done.
			_ = s.b.watcherOf().Removed(s.name)
		}
	}()
	go func() { w.confirmed <- confirm(s.id) }()
	watchCtx, stopWatch := context.WithCancel(ctx)
	s.stopWatch = stopWatch
	go func() {
		defer phase.Begin(ctx, "start.wait")()
		w.waiting <- s.b.cli.ContainerWait(watchCtx, s.id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	}()
	go func() {
		defer close(w.oomWatched)
		defer phase.Begin(ctx, "start.oom-watch")()
		s.watchOOM(watchCtx)
	}()
	return w
}

// attach joins the container's streams (its lifeline and its output),
// beside the watches.
func (s *sandbox) attach(ctx, setupCtx context.Context, w startWatches) error {
	endAttach := phase.Begin(ctx, "start.attach")
	att, err := s.b.cli.ContainerAttach(setupCtx, s.id, client.ContainerAttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		// They write this start's answers (the caller reads them) and its
		// watches (Close ends them).
		<-w.confirmed
		<-w.waiting
		<-w.oomWatched
		<-w.watcherUp
		return s.fail(ctx, "attaching to the sandbox", err)
	}
	s.att = att.HijackedResponse
	s.SetLifeline(s.att.Conn)
	endAttach()
	go func() { _, _ = stdcopy.StdCopy(&s.Out, &s.Out, s.att.Reader) }()
	return nil
}

// confirmAndStart takes the runtime's answer and starts the container.
func (s *sandbox) confirmAndStart(ctx, setupCtx context.Context, confirmed <-chan error, ln *control.Listener) error {
	endConfirm := phase.Begin(ctx, "start.confirm")
	if err := <-confirmed; err != nil {
		s.closeListener(ln)
		_ = s.Close(ctx)
		return err
	}
	endConfirm()
	endContainerStart := phase.Begin(ctx, "start.container-start")
	if _, err := s.b.cli.ContainerStart(setupCtx, s.id, client.ContainerStartOptions{}); err != nil {
		s.closeListener(ln)
		return s.fail(ctx, "starting the sandbox container", err)
	}
	endContainerStart()
	return nil
}

// awaitExit records how the container ended, then marks the holder gone.
func (s *sandbox) awaitExit(wait client.ContainerWaitResult) {
	select {
	case st := <-wait.Result:
		s.exitStatus = st.StatusCode
	case err := <-wait.Error:
		s.waitErr = err
	}
	close(s.Gone)
}

// closeListener gives up the control channel's listener of a start that
// failed before the holder could connect.
func (s *sandbox) closeListener(ln *control.Listener) {
	if ln != nil {
		_ = ln.Close()
		close(s.ctlReady)
	}
}

// fail closes the sandbox of a start that failed at stage.
func (s *sandbox) fail(ctx context.Context, stage string, err error) error {
	err = s.b.stageErr(ctx, stage, err)
	_ = s.Close(ctx)
	return err
}

// copyBack exports the staged writable paths from the sandbox and
// applies them to the host. It runs after every command, however the
// command ended.
func (s *sandbox) copyBack(ctx context.Context, res *backends.Result) {
	gone := func() bool { return s.ended() || s.killed.Load() }
	holderexec.CopyBack(ctx, s.p, gone, s.export, res)
}

func (s *sandbox) export(ctx context.Context, out []stage.Path) (*stage.Report, error) {
	u, runAs, err := helperStart(s.p, s.rt)
	if err != nil {
		return nil, err
	}
	spec := launch.ExportSpec(s.p)
	spec.RunAs = runAs
	created, err := s.b.cli.ExecCreate(ctx, s.id, client.ExecCreateOptions{
		User: u, Cmd: launch.ExportSpecArgv(spec), AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, s.execErr(ctx, "copying the outputs back", err)
	}
	att, err := s.b.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, s.execErr(ctx, "copying the outputs back", err)
	}
	defer att.Close()
	pr, pw := io.Pipe()
	var stderr holderexec.SmallBuffer
	go func() {
		_, err := stdcopy.StdCopy(pw, &stderr, att.Reader)
		pw.CloseWithError(err)
	}()
	m, rep, aerr := stage.Apply(ctx, pr, s.Manifest, staging.StageSpec(s.p, staging.ExportPaths(s.p, out)))
	_, _ = io.Copy(io.Discard, pr)
	s.Manifest = m
	code, ierr := s.execExit(ctx, created.ID)
	switch {
	case ierr != nil:
		return &rep, fmt.Errorf("copying the outputs back: %w", ierr)
	case code != 0:
		return &rep, fmt.Errorf("copying the outputs back: the export in the sandbox failed (exit %d): %s", code, strings.TrimSpace(stderr.String()))
	}
	return &rep, aerr
}

func (s *sandbox) ID() string                   { return s.id }
func (s *sandbox) Scratch() policy.ScratchPaths { return scratchPaths }

// execExit reads the exit code once the daemon has recorded it.
func (s *sandbox) execExit(ctx context.Context, execID string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, afterKillWait)
	defer cancel()
	for {
		ins, err := s.b.cli.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return 0, err
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		if s.ended() {
			// Under gVisor the daemon may never hear of the end of an exec
			// whose container was killed: it went with its container.
			return 0, errors.New("the command went with its container")
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("the command still runs after its streams closed")
		case <-s.Gone:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// kill ends the whole container at once (SIGKILL ends its pid namespace).
func (s *sandbox) kill() {
	s.killed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = s.b.cli.ContainerKill(ctx, s.id, client.ContainerKillOptions{Signal: "KILL"})
}

func (s *sandbox) ended() bool { return s.Ended() }

// endedErr explains a sandbox that stopped under its command: "from
// outside" only on evidence (holderexec.HolderEnd).
func (s *sandbox) endedErr() error {
	<-s.Gone
	if s.waitErr != nil {
		return daemonLost(s.waitErr)
	}
	if !s.b.answers(context.Background()) {
		return fmt.Errorf("the Docker daemon stopped during the run and killed the sandbox (exit %d); the result is unknown, run it again once the daemon is back", s.exitStatus)
	}
	end := holderexec.HolderEnd{Code: int(s.exitStatus), KilledByHost: s.killed.Load(), OOMKilled: s.oomEvents.Load() > 0,
		Said: s.Out.Bytes(), Outside: "`docker stop`, `docker kill` or the Docker daemon shutting down"}
	if s.outsideKill.Load() && !end.KilledByHost {
		end.Record = "the Docker daemon recorded a SIGKILL of its container that triage-sandbox did not send: `docker stop`, `docker kill` or the daemon shutting down"
	}
	return end.Err()
}

// execErr explains a failed exec step: the container may have gone.
func (s *sandbox) execErr(ctx context.Context, stage string, err error) error {
	if s.ended() {
		return s.endedErr()
	}
	return s.b.stageErr(context.WithoutCancel(ctx), stage, err)
}

// Close kills and removes the container and returns once the daemon no
// longer has it.
func (s *sandbox) Close(ctx context.Context) error {
	return s.CloseOnce(func() error {
		ctx := context.WithoutCancel(ctx)
		endRemove := phase.Begin(ctx, "close.remove")
		err := s.end(ctx)
		endRemove()
		// The removed container ends any wait for the holder's connection.
		select {
		case <-s.ctlReady:
			if s.ctl != nil {
				_ = s.ctl.Close()
			}
		case <-time.After(controlWait):
		}
		if s.att.Conn != nil {
			s.att.Close()
		}
		if s.stopWatch != nil {
			s.stopWatch()
		}
		if err == nil {
			// One it could not remove stays listed: the owner's death
			// removes it then. Its name too, when its id's listing
			// failed or has not taken the name's place yet.
			if s.listed {
				_ = s.b.watcherOf().Removed(s.id)
			}
			if s.name != "" {
				_ = s.b.watcherOf().Removed(s.name)
			}
		}
		if err == nil {
			// Only once the container is gone: its bind holds the overlay.
			err = errors.Join(s.ov.Remove(), s.dov.remove(ctx))
		}
		if err != nil {
			return fmt.Errorf("removing container %s: %w", shortID(s.id), err)
		}
		return nil
	})
}

// lifelineEndWait bounds how long Close waits for a holder told to end
// (its lifeline cut) to be gone before it force-removes the container.
const lifelineEndWait = 3 * time.Second

// end ends the sandbox and returns once the daemon no longer has its
// container. With a lifeline it ends the way `docker run --rm` does: the
// lifeline cut, the holder kills everything and exits, the container's
// pid namespace goes with it, and AutoRemove removes it. That spares the
// daemon a kill through the runtime: a cold run took 0.96x of one that
// force-removes (20 paired runs, load 5). A container not gone within
// lifelineEndWait, or a wait the daemon cannot answer, is force-removed
// as before; so is Podman's, whose compatible wait was not seen faster
// than its forced remove (its removals vary by seconds here).
func (s *sandbox) end(ctx context.Context) error {
	if !s.started || !s.p.Lifetime.Lifeline || s.att.Conn == nil || s.ended() {
		return s.b.remove(ctx, s.id)
	}
	if eng, err := s.b.Engine(ctx); err != nil || eng.IsPodman() {
		return s.b.remove(ctx, s.id)
	}
	wctx, cancel := context.WithTimeout(ctx, lifelineEndWait)
	defer cancel()
	wait := s.b.cli.ContainerWait(wctx, s.id, client.ContainerWaitOptions{Condition: container.WaitConditionRemoved})
	if err := s.att.CloseWrite(); err == nil {
		select {
		case <-wait.Result:
			return nil
		case err := <-wait.Error:
			// Not found: removed before the wait reached the daemon.
			if cerrdefs.IsNotFound(err) {
				return nil
			}
		}
	}
	return s.b.remove(ctx, s.id)
}

// watchOOM counts the daemon's oom events for the container: exit code 137
// alone cannot tell an OOM kill from SIGKILL. It also notes the daemon's
// kill events with SIGKILL that the host did not send (outsideKill).
func (s *sandbox) watchOOM(ctx context.Context) {
	ev := s.b.cli.Events(ctx, client.EventsListOptions{
		Filters: make(client.Filters).Add("container", s.id).Add("event", "oom").Add("event", "kill"),
	})
	go func() {
		for {
			select {
			case m, ok := <-ev.Messages:
				if !ok {
					return
				}
				switch m.Action {
				case events.ActionOOM:
					s.oomEvents.Add(1)
				case events.ActionKill:
					// The host sets killed before it sends its own.
					if sig := m.Actor.Attributes["signal"]; (sig == "9" || sig == "SIGKILL" || sig == "KILL") && !s.killed.Load() {
						s.outsideKill.Store(true)
					}
				}
			case <-ev.Err:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
}

// daemonLost explains a wait that broke off: the daemon died or restarted.
func daemonLost(err error) error {
	return fmt.Errorf("lost the Docker daemon during the run (%v); the result is unknown. Once the daemon is back it stops and removes the sandbox; `triage-sandbox gc` removes anything left", err)
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// CheckoutDiscarded implements backends.DiscardReporter: the host or the
// daemon made the checkout's overlay.
func (s *sandbox) CheckoutDiscarded() bool {
	return (s.ov != nil && len(s.ov.Sources) > 0) || s.dov != nil
}
