package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/types/mount"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/control"
	"github.com/triage-sandbox/triage-sandbox/backends/holderexec"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// ControlSockPath is where the host's control socket is bound in.
const ControlSockPath = "/.triage-sandbox/control.sock"

// ControlUnavailable starts the line the holder prints when it cannot dial
// the control socket (a daemon in a VM, a remote one): commands are then
// docker execs, as before.
const ControlUnavailable = "triage-sandbox: control: unavailable"

// controlWait bounds how long a start waits for the holder to dial in.
const controlWait = 20 * time.Second

// controlDir holds the control sockets of starting sandboxes, this user's
// alone.
func controlDir() string {
	if os.Geteuid() == 0 {
		return "/run/triage-sandbox/docker"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "triage-sandbox", "docker")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("triage-sandbox-%d", os.Geteuid()), "docker")
}

// withControl binds a fresh control socket into the holder's container and
// tells the holder to dial it; nil when none can be made (commands are
// then docker execs). gVisor (runtime runsc) cannot bind a socket file in.
func withControl(p *policy.Policy, req *CreateRequest) *control.Listener {
	if filepath.Base(p.Runtime) == "runsc" {
		return nil
	}
	ln, err := control.Listen(controlDir(), p.User.UID, p.User.GID)
	if err != nil {
		return nil
	}
	req.HostConfig.Mounts = append(req.HostConfig.Mounts, mount.Mount{
		Type: mount.TypeBind, Source: ln.Path, Target: ControlSockPath, ReadOnly: true})
	req.Config.Cmd = append(req.Config.Cmd, "--control-sock", ControlSockPath)
	return ln
}

// awaitControl takes the holder's connection, the only one the socket
// accepts; a holder that says it cannot dial, or ends, leaves docker exec.
func (s *sandbox) awaitControl(ctx context.Context, ln *control.Listener) {
	defer close(s.ctlReady)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), controlWait)
	defer cancel()
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-actx.Done():
				return
			case <-s.exited:
				cancel()
				return
			case <-t.C:
				if strings.Contains(s.holdOut.String(), ControlUnavailable) {
					cancel()
					return
				}
			}
		}
	}()
	if c, err := ln.Accept(actx); err == nil {
		s.ctl = c
	}
}

// execByHolder runs the command through the control channel: no docker
// exec for it nor for its copy back.
func (s *sandbox) execByHolder(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	oomBefore := s.oomEvents.Load()
	run := holderexec.Run{Policy: s.p, Sandbox: (*holderView)(s), Start: holderexec.ByHolder(s.ctl),
		ExportOnFD: true, Manifest: &s.manifest}
	res, err := run.Exec(ctx, cmd, out)
	if err == nil && res.ExitCode == exitcode.Killed && !res.TimedOut {
		// The oom event can trail the exit by a moment.
		for i := 0; i < 20 && s.oomEvents.Load() == oomBefore; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		res.OOMKilled = s.oomEvents.Load() > oomBefore
	}
	if err != nil {
		// The channel ends with the container; the daemon's word on why
		// (stopped, gone, stopped from outside) trails it by a moment.
		select {
		case <-s.exited:
			err = s.endedErr()
		case <-time.After(afterKillWait):
			if !s.b.answers(context.WithoutCancel(ctx)) {
				err = fmt.Errorf("the Docker daemon stopped answering during the run (%v); the result is unknown, run it again once the daemon is back", err)
			}
		}
	}
	return res, err
}

// holderView is the sandbox as holderexec sees it.
type holderView sandbox

func (h *holderView) ID() string              { return h.id }
func (h *holderView) Exited() <-chan struct{} { return h.exited }
func (h *holderView) Kill()                   { (*sandbox)(h).kill() }
func (h *holderView) Killed() bool            { return h.killed.Load() }
func (h *holderView) Said() string            { return holderexec.SaidLine(h.holdOut.String()) }
