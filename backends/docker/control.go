package docker

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/moby/moby/api/types/mount"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
)

// ControlDirPath is where the directory of the host's control socket is
// bound in: the directory, not the socket, so the host's removal of the
// socket once the holder connected shows inside (a bound file would stay
// visible, to every socket scanner a command runs).
const ControlDirPath = "/.triage-sandbox/control"

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
// then docker execs), as under a runtime that cannot bind a socket file in
// (gVisor).
func withControl(rt runtimes.Traits, p *policy.Policy, req *CreateRequest) *control.Listener {
	if !rt.BindsSocketFile {
		return nil
	}
	ln, err := control.Listen(controlDir(), p.User.UID, p.User.GID)
	if err != nil {
		return nil
	}
	sock := path.Join(ControlDirPath, filepath.Base(ln.Path))
	req.setHold(func(h *protocol.Hold) { h.ControlSock = sock })
	req.HostConfig.Mounts = append(req.HostConfig.Mounts, mount.Mount{
		Type: mount.TypeBind, Source: filepath.Dir(ln.Path), Target: ControlDirPath, ReadOnly: true})
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
			case <-s.Gone:
				cancel()
				return
			case <-t.C:
				if _, ok := protocol.First(s.Out.Bytes(), protocol.StateControlUnavailable); ok {
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

// overlayRoot holds the overlays of running sandboxes (root only: making
// an overlay needs root).
const overlayRoot = "/run/triage-sandbox/docker-overlays"

// overlays makes the overlays of p's discard mounts (the checkout) and
// binds each merged directory, writable, where the read-only host
// directory was. Where none can be made the binds stay read-only and the
// warning says why.
func overlays(req *CreateRequest, p *policy.Policy) (*overlay.Set, string) {
	if !overlay.Wanted(p) {
		return nil, ""
	}
	if os.Geteuid() == 0 {
		if err := hostfs.PrivateDir(overlayRoot); err != nil {
			return nil, "the project checkout is read-only in this sandbox: " + err.Error()
		}
	}
	ov, warning := overlay.For(filepath.Join(overlayRoot, req.Name), p)
	for i, m := range req.HostConfig.Mounts {
		if src, rw := ov.Source(m.Target); rw && m.Type == mount.TypeBind && m.Source == m.Target {
			req.HostConfig.Mounts[i].Source, req.HostConfig.Mounts[i].ReadOnly = src, false
		}
	}
	return ov, warning
}
