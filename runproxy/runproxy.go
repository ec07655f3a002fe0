// Package runproxy serves a network allow-list to one sandbox: the
// socket's directory (bound read-only into the sandbox), the egress proxy
// listening in it, the decisions read per command, and the sweep of the
// directories dead owners left. A one-shot run (package sandbox) starts one
// before its sandbox and closes it after; a keeper (package warm) holds one
// per session or pooled sandbox and serves a fresh proxy for each command.
package runproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/internal/egresstest"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Proxy is a sandbox's network proxy: a directory of its own that only
// the sandbox's identity (and root) can enter, and the proxy on a socket
// in it while it serves.
type Proxy struct {
	// ctx is Start's: each proxy served (Renew) stops when it ends, and
	// reads the test hook from it.
	ctx  context.Context
	cfg  egress.Config
	id   policy.Identity
	dir  string
	sock string

	// onHost: the proxy listens on the host's loopback (no directory;
	// one run only).
	onHost bool

	mu  sync.Mutex
	cur *egress.Proxy // nil while stopped
	// seen is how many of cur's decisions were already read.
	seen int
}

// Start makes the socket's directory and serves p's allow-list on it, and
// returns the policy the backend starts with: p's copy naming the
// directory. A p without an allow-list gets p back and no proxy. The proxy
// stops when ctx ends; the test hook (egresstest) is read from ctx.
//
// A backend whose sandbox shares the host's loopback (caps without
// own_loopback: seatbelt) has no namespace to bind a socket into: its
// proxy listens on a free port of 127.0.0.1 instead, and asks every
// request for a secret of the run (every local process can reach that
// port), which only the command's proxy variables carry (the returned
// policy's Network.HostProxy). Such a proxy serves one run: Renew refuses.
func Start(ctx context.Context, p *policy.Policy, caps []policy.Capability) (*policy.Policy, *Proxy, error) {
	if p.Network.Mode != policy.NetworkProxy {
		return p, nil, nil
	}
	if !slices.Contains(caps, profiles.CapOwnLoopback) {
		return startOnHost(ctx, p)
	}
	dir, err := makeDir(p.User)
	if err != nil {
		return nil, nil, fmt.Errorf("the network proxy (%s): %w", p.Network.Key, err)
	}
	hook := egresstest.From(ctx)
	r := &Proxy{ctx: ctx, id: p.User, dir: dir, sock: filepath.Join(dir, filepath.Base(egress.SocketInSandbox)),
		cfg: egress.Config{Rules: p.Network.Rules, TestUpstreams: hook.Upstreams, Resolver: hook.Resolver, Dial: hook.Dial,
			Limits: egress.Limits{MaxBytes: hook.MaxBytes}, BrokerRoots: hook.Roots}}
	err = r.broker(p)
	if err == nil {
		err = r.Renew()
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("the network proxy (%s): %w", p.Network.Key, err)
	}
	cp := *p
	cp.Network.SocketDir = dir
	cp.Env = withPlaceholders(p.Env, r.cfg.Brokers)
	return &cp, r, nil
}

// authorityLife is how long a sandbox's broker CA is valid: past a
// session's life in practice (its key is never written anywhere, and its
// names are constrained to the brokered hosts); a session older than this
// gets TLS errors from brokered hosts, never an unchecked connection.
const authorityLife = 7 * 24 * time.Hour

// broker reads p's brokered secrets and makes the sandbox's one broker CA
// and trust bundle, which every proxy serving it (Renew) presents.
func (r *Proxy) broker(p *policy.Policy) error {
	bs, err := brokerSecrets(p)
	if err != nil || len(bs) == 0 {
		return err
	}
	auth, err := egress.NewAuthority(bs, authorityLife)
	if err != nil {
		return err
	}
	if err := writeTrustBundle(r.dir, auth.PEM()); err != nil {
		return err
	}
	r.cfg.Brokers, r.cfg.Authority = bs, auth
	return nil
}

// startOnHost starts p's proxy on a free port of the host's loopback,
// with a secret of the run.
func startOnHost(ctx context.Context, p *policy.Policy) (*policy.Policy, *Proxy, error) {
	if len(p.Network.Brokers) > 0 {
		return nil, nil, fmt.Errorf("the network proxy (%s): brokered secrets need a trust bundle bound into the sandbox, which a sandbox on the host's loopback has no directory for; remove the broker tables for this backend", p.Network.Key)
	}
	secret, err := egress.NewSecret()
	if err != nil {
		return nil, nil, fmt.Errorf("the network proxy (%s): %w", p.Network.Key, err)
	}
	hook := egresstest.From(ctx)
	cfg := egress.Config{Rules: p.Network.Rules, TestUpstreams: hook.Upstreams, Resolver: hook.Resolver, Dial: hook.Dial,
		Limits: egress.Limits{MaxBytes: hook.MaxBytes}, Secret: secret}
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
	return &cp, &Proxy{ctx: ctx, cfg: cfg, id: p.User, cur: px, onHost: true}, nil
}

// Secret is the password a proxy on the host's loopback asks for, "" for
// a proxy on a socket (or none).
func (r *Proxy) Secret() string {
	if r == nil {
		return ""
	}
	return r.cfg.Secret
}

// Dir is the socket's directory.
func (r *Proxy) Dir() string { return r.dir }

// Renew stops the proxy serving now (ending its tunnels) and serves a
// fresh one on the same socket: a command of its own gets the run's
// bounds (connections, bytes, time) and a record of its own.
func (r *Proxy) Renew() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.onHost {
		return errors.New("a network proxy on the host's loopback serves one run; sessions and pools on this backend cannot have an allow-list")
	}
	r.stopLocked()
	px, err := egress.Listen(r.ctx, r.cfg, r.sock)
	if err == nil && os.Geteuid() == 0 {
		err = os.Lchown(r.sock, r.id.UID, r.id.GID)
	}
	if err != nil {
		if px != nil {
			_ = px.Close()
		}
		return err
	}
	r.cur, r.seen = px, 0
	return nil
}

// Stop ends the proxy serving now (its socket goes: a connection from the
// sandbox is refused until Renew); the directory stays.
func (r *Proxy) Stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
}

func (r *Proxy) stopLocked() {
	if r.cur != nil {
		// Only the last serving's decisions are read after a stop: keep it
		// for Decisions.
		_ = r.cur.Close()
	}
}

// settleWait bounds how long a read waits for the proxy's open
// connections to end before it reads the decisions.
const settleWait = 500 * time.Millisecond

// Decisions are the connections the proxy serving now (or the last one
// that served) decided since the last call, as the proxy recorded them:
// the names are the sandbox's, for the caller to neutralise.
func (r *Proxy) Decisions() []egress.Decision {
	return r.read(false)
}

// End is the end of a command: it waits (bounded) for the command's
// connections to close, stops the proxy (cutting what is still open, so
// nothing the command left reaches out after it) and returns the
// decisions Decisions has not returned, the cut ones included.
func (r *Proxy) End() []egress.Decision {
	return r.read(true)
}

// read waits (bounded) for the serving proxy's connections to close, stops
// it when stop says so, and returns the decisions not read yet.
func (r *Proxy) read(stop bool) []egress.Decision {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return nil
	}
	// The command's connections close as it ends; their decisions are
	// recorded a moment later. Bounded: a connection held open from
	// elsewhere in a session must not hold the run's result back.
	ctx, cancel := context.WithTimeout(context.Background(), settleWait)
	r.cur.Settle(ctx)
	cancel()
	if stop {
		_ = r.cur.Close() // waits for every connection's record
	}
	return r.unreadLocked()
}

// unreadLocked are cur's decisions not read yet.
func (r *Proxy) unreadLocked() []egress.Decision {
	all := r.cur.Decisions()
	if r.seen > len(all) {
		r.seen = 0
	}
	out := all[r.seen:]
	r.seen = len(all)
	return out
}

// Close stops the proxy and removes the socket's directory.
func (r *Proxy) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	if r.cur != nil {
		err = r.cur.Close()
	}
	if r.dir == "" {
		return err // on the host's loopback: no directory
	}
	return errors.Join(err, os.RemoveAll(r.dir))
}

// Prefix names the socket directories, for the sweep.
const Prefix = "triage-sandbox-egress-"

// stale is how old a socket directory whose name names no owner and that
// holds no socket must be before the sweep takes it (one being made has
// none for a moment).
const stale = 10 * time.Minute

// Base is where the socket directories go: the caller's runtime directory
// when it has one (not as root: the sandbox's identity must reach it),
// else the temporary directory.
func Base() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) && os.Geteuid() != 0 {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return os.TempDir()
}

// maxSocketPath is the longest path a unix socket may be bound at
// (sun_path's 108 bytes, less the terminating NUL).
const maxSocketPath = 107

// makeDir makes the socket's directory: a fresh one (0700) in Base, named
// after this process (pid and start time, for the sweep), given to the
// sandbox's identity when that is another uid (triage-sandbox as root).
func makeDir(id policy.Identity) (string, error) {
	base := Base()
	Sweep(base, time.Now())
	prefix := ownerPrefix(os.Getpid(), ownership.ProcessStart(os.Getpid()))
	// A socket's path must fit sun_path; past it bind says only "invalid
	// argument". MkdirTemp adds at most 20 digits.
	if n := len(filepath.Join(base, prefix+"12345678901234567890", filepath.Base(egress.SocketInSandbox))); n > maxSocketPath {
		return "", fmt.Errorf("the proxy's socket would be %d bytes long under %s, past the %d a unix socket's path may be; set TMPDIR (or XDG_RUNTIME_DIR) to a shorter directory", n, base, maxSocketPath)
	}
	dir, err := os.MkdirTemp(base, prefix)
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

// ownerPrefix is the name's start for the directories of process pid
// started at start: Prefix, "pid-start-", then MkdirTemp's random part.
func ownerPrefix(pid int, start string) string {
	return fmt.Sprintf("%s%d-%s-", Prefix, pid, start)
}

// owner is the pid and start time a directory's name records; ok is false
// for a name of another form (an older triage-sandbox's).
func owner(name string) (pid int, start string, ok bool) {
	f := strings.SplitN(strings.TrimPrefix(name, Prefix), "-", 3)
	if len(f) != 3 || f[1] == "" {
		return 0, "", false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	for _, c := range f[1] {
		if c < '0' || c > '9' {
			return 0, "", false
		}
	}
	return pid, f[1], true
}

// Sweep removes the socket directories whose owner died (kill -9 skips the
// removal): the process the name records is gone, or its pid now belongs
// to another process. The sandbox cannot rename its directory (it sees
// only its contents, bound read-only), so the name is ours. A name of an
// older form goes when its socket refuses a connection (nobody listens),
// or when it has none and is old. It returns the directories removed.
func Sweep(base string, now time.Time) (removed []string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), Prefix) {
			continue // a symlink is never a directory here
		}
		dir := filepath.Join(base, e.Name())
		gone := false
		if pid, start, ok := owner(e.Name()); ok {
			gone = ownership.ProcessStart(pid) != start
		} else {
			gone = unownedGone(dir, e, now)
		}
		if gone && os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// unownedGone: a directory whose name names no owner was left by a dead
// run.
func unownedGone(dir string, e os.DirEntry, now time.Time) bool {
	sock := filepath.Join(dir, filepath.Base(egress.SocketInSandbox))
	c, err := net.DialTimeout("unix", sock, time.Second)
	switch {
	case err == nil:
		_ = c.Close() // a live run's
	case errors.Is(err, syscall.ECONNREFUSED):
		return true
	case errors.Is(err, os.ErrNotExist):
		fi, err := e.Info()
		return err == nil && now.Sub(fi.ModTime()) > stale
	}
	return false
}
