package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/hints"
	"github.com/triage-sandbox/triage-sandbox/internal/egresstest"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// runProxy is a run's network proxy (a network allow-list): started before
// the sandbox, on a socket in a directory of its own that only the
// sandbox's identity (and root) can enter, closed after the sandbox.
type runProxy struct {
	proxy *egress.Proxy
	dir   string
	// pass is the host proxy's secret, "" for a socket.
	pass string
	// seen is how many decisions earlier commands of the session took.
	seen int
}

// startEgress starts p's proxy when p has an allow-list, and returns the
// policy the backend starts with: p's copy naming the socket's directory,
// or, for a backend whose sandbox shares the host's loopback (caps
// without own_loopback: seatbelt), the proxy's port on it.
func startEgress(ctx context.Context, p *policy.Policy, caps []policy.Capability) (*policy.Policy, *runProxy, error) {
	if p.Network.Mode != policy.NetworkProxy {
		return p, nil, nil
	}
	hook := egresstest.From(ctx)
	cfg := egress.Config{Rules: p.Network.Rules, TestUpstreams: hook.Upstreams, Resolver: hook.Resolver, Dial: hook.Dial,
		Limits: egress.Limits{MaxBytes: hook.MaxBytes}}
	if !slices.Contains(caps, profiles.CapOwnLoopback) {
		return startHostProxy(ctx, p, cfg)
	}
	dir, err := egressDir(p.User)
	if err != nil {
		return nil, nil, fmt.Errorf("the network proxy (%s): %w", p.Network.Key, err)
	}
	sock := filepath.Join(dir, filepath.Base(egress.SocketInSandbox))
	px, err := egress.Listen(ctx, cfg, sock)
	if err == nil && os.Geteuid() == 0 {
		err = os.Lchown(sock, p.User.UID, p.User.GID)
	}
	if err != nil {
		if px != nil {
			_ = px.Close()
		}
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("the network proxy (%s): %w", p.Network.Key, err)
	}
	cp := *p
	cp.Network.SocketDir = dir
	return &cp, &runProxy{proxy: px, dir: dir}, nil
}

// startHostProxy starts the proxy on a port of the host's loopback, for a
// sandbox that has no loopback of its own to forward from and shares the
// host's (no socket can be bound into it). Every local process can reach
// that port, so the proxy asks each request for a secret of this run,
// which only the command's proxy variables carry.
func startHostProxy(ctx context.Context, p *policy.Policy, cfg egress.Config) (*policy.Policy, *runProxy, error) {
	secret, err := egress.NewSecret()
	if err != nil {
		return nil, nil, fmt.Errorf("the network proxy (%s): %w", p.Network.Key, err)
	}
	cfg.Secret = secret
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("the network proxy (%s): listening on the host's loopback: %w", p.Network.Key, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	px, err := egress.Serve(ctx, cfg, ln)
	if err != nil {
		return nil, nil, fmt.Errorf("the network proxy (%s): %w", p.Network.Key, err)
	}
	cp := *p
	cp.Network.HostProxy = &policy.HostProxy{Port: port, Secret: secret}
	return &cp, &runProxy{proxy: px, pass: secret}, nil
}

// secret is the host proxy's secret, "" for none.
func (r *runProxy) secret() string {
	if r == nil {
		return ""
	}
	return r.pass
}

// egressDir makes the socket's directory: a fresh one (0700), in the
// caller's runtime directory when it has one, given to the sandbox's
// identity when that is another uid (triage-sandbox as root).
func egressDir(id policy.Identity) (string, error) {
	base := os.TempDir()
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) && os.Geteuid() != 0 {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			base = d
		}
	}
	sweepEgress(base, time.Now())
	dir, err := os.MkdirTemp(base, egressPrefix)
	if err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(dir, id.UID, id.GID); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// egressPrefix names the socket directories, for the sweep.
const egressPrefix = "triage-sandbox-egress-"

// egressStale is how old a socket directory without a socket must be
// before the sweep takes it (one being made has none for a moment).
const egressStale = 10 * time.Minute

// sweepEgress removes the socket directories of runs whose owner died
// (kill -9 skips the removal): a socket nobody listens on refuses a
// connection at once; a live run's proxy accepts it.
func sweepEgress(base string, now time.Time) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), egressPrefix) {
			continue // a symlink is never a directory here
		}
		dir := filepath.Join(base, e.Name())
		sock := filepath.Join(dir, filepath.Base(egress.SocketInSandbox))
		c, err := net.DialTimeout("unix", sock, time.Second)
		switch {
		case err == nil:
			_ = c.Close() // a live run's
		case errors.Is(err, syscall.ECONNREFUSED):
			_ = os.RemoveAll(dir)
		case errors.Is(err, os.ErrNotExist):
			if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > egressStale {
				_ = os.RemoveAll(dir)
			}
		}
	}
}

// settleWait bounds how long a run waits for its proxy's open connections
// to end before it reads the decisions.
const settleWait = 500 * time.Millisecond

// decisions are the connections decided since the last call, with what
// the sandbox chose (the name, and the reasons quoting it) neutralised.
func (r *runProxy) decisions() []egress.Decision {
	if r == nil {
		return nil
	}
	// The command's connections close as it ends; their decisions are
	// recorded a moment later. Bounded: a connection held open from
	// elsewhere in a session must not hold the run's result back.
	ctx, cancel := context.WithTimeout(context.Background(), settleWait)
	r.proxy.Settle(ctx)
	cancel()
	all := r.proxy.Decisions()
	if r.seen > len(all) {
		r.seen = 0
	}
	out := all[r.seen:]
	r.seen = len(all)
	for i := range out {
		out[i].Host, out[i].Reason = output.Line(out[i].Host), output.Line(out[i].Reason)
	}
	return out
}

// close ends every tunnel and removes the socket's directory.
func (r *runProxy) close() error {
	if r == nil {
		return nil
	}
	if r.dir == "" {
		return r.proxy.Close() // on the host's loopback: no directory
	}
	return errors.Join(r.proxy.Close(), os.RemoveAll(r.dir))
}

// egressHints name, for each refused connection, what would allow it.
func egressHints(p *policy.Policy, ds []egress.Decision) []string {
	var refused []hints.Refusal
	for _, d := range ds {
		if !d.Allowed {
			refused = append(refused, hints.Refusal{Host: d.Host, Port: d.Port, Reason: d.Reason})
		}
	}
	return hints.Egress(p, refused)
}
