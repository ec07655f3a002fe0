package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// execAttempts bounds the tries of a docker exec that failed to start the
// supervisor (seen on a loaded daemon: "OCI runtime exec failed"): it ran
// nothing, so it is tried again, and never passed off as the command's
// output.
const execAttempts = 3

// oomEventLag bounds how long the daemon's oom event may trail the kill;
// oomEventLagEnded, for a container that ended by itself or runs gVisor
// (killed whole at its memory limit), whose exit and oom news reach the
// daemon separately and, on a busy machine, seconds apart.
const (
	oomEventLag      = time.Second
	oomEventLagEnded = 5 * time.Second
)

// Exec runs one command through the in-sandbox supervisor, started by the
// holder over its control channel or, without one, by a docker exec; the
// rest is holderexec.Run's. The supervisor enforces the timeout on the
// command's whole tree; the host keeps its own clock as the judge of
// "timed out" and kills the whole container if the tree does not end soon
// after.
func (s *sandbox) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	if err := s.Admit(cmd, s.endedErr); err != nil {
		return backends.Result{Sandbox: s.id}, err
	}
	<-s.ctlReady
	run := holderexec.Run{Policy: s.p, Sandbox: (*holderView)(s), Start: s.byExec(cmd.Stdin != nil),
		Manifest: &s.Manifest, Seccomp: holderexec.SeccompFor(s.rt), OOMKills: s.oomKills(),
		OOMEndsSandbox: s.rt.UserSpaceKernel}
	tries := execAttempts
	if s.ctl != nil {
		// The copy back rides on the command's own start: no docker exec
		// for it either.
		run.Start, run.ExportOnFD, tries = holderexec.ByHolder(s.ctl), true, 1
	}
	res, err := s.execTrying(ctx, run, tries, cmd, out)
	if err == nil && !run.ExportOnFD {
		s.copyBack(ctx, &res)
	}
	return res, err
}

// execTrying runs the command, up to tries times while the supervisor
// fails to start it.
func (s *sandbox) execTrying(ctx context.Context, run holderexec.Run, tries int, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	for attempt := 1; ; attempt++ {
		res, err := run.Exec(ctx, cmd, out)
		var ns *holderexec.NotStarted
		switch {
		case !errors.As(err, &ns):
			return res, s.explain(ctx, err)
		case s.ended():
			return res, s.endedErr()
		case tries == 1:
			return res, err
		case attempt == tries || ctx.Err() != nil:
			return res, fmt.Errorf("the sandbox could not start the command (%d tries): %s", attempt, ns.Why)
		}
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
}

// explain says why a command's run broke off (nil for none). A control
// channel or an exec ends with its container a moment before the daemon
// tells why (stopped, gone, stopped from outside), so that is awaited; a
// daemon that stopped answering is said as such.
func (s *sandbox) explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	select {
	case <-s.Gone:
		return s.endedErr()
	case <-time.After(afterKillWait):
	}
	if !s.b.answers(context.WithoutCancel(ctx)) {
		return fmt.Errorf("the Docker daemon stopped answering during the run (%v); the result is unknown, run it again once the daemon is back", err)
	}
	return err
}

// byExec starts the supervisor with a docker exec, for a holder without a
// control channel (a runtime that cannot bind the socket in, a daemon that
// cannot reach it). input: the command reads the exec's stdin, so it has
// no lifeline and a cancel ends the whole container.
func (s *sandbox) byExec(input bool) holderexec.Starter {
	return func(ctx context.Context, spec protocol.Exec, gate *holderexec.OutputHold, _ *os.File) (*holderexec.Started, error) {
		setupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), setupTimeout)
		defer cancel()
		opts, err := execOptions(s.p, spec)
		if err != nil {
			return nil, err
		}
		created, err := s.b.cli.ExecCreate(setupCtx, s.id, opts)
		if err != nil {
			return nil, s.execErr(ctx, "creating the command in the sandbox", err)
		}
		att, err := s.b.cli.ExecAttach(setupCtx, created.ID, client.ExecAttachOptions{})
		if err != nil {
			return nil, s.execErr(ctx, "starting the command in the sandbox", err)
		}
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			_, _ = stdcopy.StdCopy(gate.Stdout(), gate.Stderr(), att.Reader)
		}()
		wait := func() error {
			defer att.Close()
			if s.streamOutlived(copied, att.Close) {
				return &holderexec.ExitStatus{Code: holderexec.ExitKilled}
			}
			return s.execEnd(ctx, created.ID)
		}
		started := &holderexec.Started{Stdin: execStdin{att.HijackedResponse}, Wait: wait}
		if input {
			started.Stop = s.kill
		}
		return started, nil
	}
}

// execDrain bounds how long an exec's output may trail its container's end.
const execDrain = 500 * time.Millisecond

// streamOutlived waits for an exec's output to end (copied) and says
// whether it outlived the container: under gVisor the daemon may never close
// the stream of an exec whose container was killed (the whole sandbox at
// its memory limit), so past execDrain after the container's end the
// stream is cut (cut) and the exec, gone with its container, counts as
// killed.
func (s *sandbox) streamOutlived(copied <-chan struct{}, cut func()) bool {
	select {
	case <-copied:
		return false
	case <-s.Gone:
	}
	select {
	case <-copied:
		return false
	case <-time.After(execDrain):
	}
	cut()
	<-copied
	return true
}

// execEnd is how an exec whose streams closed ended, as a Starter's Wait
// says it.
func (s *sandbox) execEnd(ctx context.Context, execID string) error {
	code, err := s.execExit(context.WithoutCancel(ctx), execID)
	if (err != nil || code > exitcode.SignalBase) && ctx.Err() == nil && !s.killed.Load() {
		// A signal or a lost exec may mean the container is going away
		// under the command (a daemon shutting down): its exit trails. (A
		// cancel's end, or the host's kill, is not news.)
		select {
		case <-s.Gone:
		case <-time.After(2 * time.Second):
		}
	}
	switch {
	case err != nil && (s.ended() || s.killed.Load()):
		// The exec went with its container, killed.
		return &holderexec.ExitStatus{Code: holderexec.ExitKilled}
	case err != nil:
		return s.execErr(ctx, "reading the command's exit status", err)
	case code != 0:
		return &holderexec.ExitStatus{Code: code}
	}
	return nil
}

// execStdin is an exec's input: closing it half-closes the connection (the
// supervisor's lifeline, or its command's end of input) and leaves the
// output flowing.
type execStdin struct{ att client.HijackedResponse }

func (w execStdin) Write(p []byte) (int, error) { return w.att.Conn.Write(p) }
func (w execStdin) Close() error                { return w.att.CloseWrite() }

// oomKills is one command's view of the container's oom events, for
// holderexec.Run.OOMKills: the daemon tells of an OOM kill a moment after
// it, so a count asked with a settle waits up to oomEventLag (a container
// that ended by itself: oomEventLagEnded) for news past
// the count it gave before.
func (s *sandbox) oomKills() func(settle time.Duration) uint64 {
	var last int64
	return func(settle time.Duration) uint64 {
		wait := min(settle, oomEventLag)
		if settle > 0 && (s.ended() || s.rt.UserSpaceKernel) && !s.killed.Load() {
			// Past its settle: an ended container without news of an OOM
			// kill makes the run's result unknown; under gVisor the news
			// may come before the container's end, seconds after the
			// command's.
			wait = oomEventLagEnded
		}
		n := s.oomEvents.Load()
		for end := time.Now().Add(wait); n == last && time.Now().Before(end); n = s.oomEvents.Load() {
			time.Sleep(50 * time.Millisecond)
		}
		last = n
		return uint64(n)
	}
}

// holderView is the sandbox as holderexec sees it.
type holderView sandbox

func (h *holderView) ID() string   { return h.id }
func (h *holderView) Kill()        { (*sandbox)(h).kill() }
func (h *holderView) Killed() bool { return h.killed.Load() }
