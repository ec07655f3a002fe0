package selftest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
)

// Listener is a TCP canary that counts connections.
type Listener struct {
	Addr string
	ln   net.Listener
	hits atomic.Int64
}

// Hits is the number of connections accepted so far.
func (l *Listener) Hits() int64 { return l.hits.Load() }

// Reset zeroes the counter.
func (l *Listener) Reset() { l.hits.Store(0) }

func newListener(addr string) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &Listener{Addr: ln.Addr().String(), ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			l.hits.Add(1)
			conn.Close()
		}
	}()
	return l, nil
}

// listen starts canary listeners on loopback and on every other address of
// this machine (never a remote address), and planted agent sockets.
func (c *Canaries) listen() error {
	var err error
	if c.Loopback, err = newListener("127.0.0.1:0"); err != nil {
		return fmt.Errorf("canary listener on loopback: %w", err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("listing this machine's addresses: %w", err)
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() || ipn.IP.IsMulticast() {
			continue
		}
		l, err := newListener(net.JoinHostPort(ipn.IP.String(), "0"))
		if err != nil {
			continue // an address that cannot be bound is not a target
		}
		c.Remote = append(c.Remote, l)
	}
	// Agent sockets in the home, and a host daemon's socket inside a mounted
	// directory (git's fsmonitor daemon keeps one in a repository's .git):
	// the workspace root's, a plain read-only bind in every configuration
	// (the checkout is an overlay by default, which passes no connect
	// through; IPC-07 has sockets there too).
	c.MountSocket = filepath.Join(c.Root, ".git", "fsmonitor--daemon.ipc")
	if hostOS == "darwin" {
		// Where Docker Desktop keeps its socket (macOS runtimes keep theirs
		// in the home): IPC-01's control has it to reach on a Mac without one.
		c.RuntimeSockets = []string{filepath.Join(c.Home, ".docker/run/docker.sock")}
	}
	for _, p := range append([]string{filepath.Join(c.Home, ".ssh/agent.sock"), filepath.Join(c.Home, ".gnupg/S.gpg-agent"),
		filepath.Join(c.Home, "run/user/bus"), c.MountSocket}, c.RuntimeSockets...) {
		mode := os.FileMode(0o700)
		if p == c.MountSocket {
			mode = 0o755 // a repository's .git: searchable, as the sandbox sees one
		}
		if err := os.MkdirAll(filepath.Dir(p), mode); err != nil {
			return err
		}
		ln, err := net.Listen("unix", p)
		if err != nil {
			return fmt.Errorf("canary socket %s: %w", p, err)
		}
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				conn.Close()
			}
		}()
		c.sockLns = append(c.sockLns, ln)
		if p == c.MountSocket {
			// As when the sandbox runs as the socket's owner (a normal
			// user): only the mask keeps it out.
			if err := os.Chmod(p, 0o777); err != nil {
				return err
			}
		}
		if p != c.MountSocket && !slices.Contains(c.RuntimeSockets, p) {
			c.Sockets = append(c.Sockets, p)
		}
	}
	return c.listenDeep()
}

// UnixListener is a unix socket canary that counts connections.
type UnixListener struct {
	Path string
	ln   net.Listener
	hits atomic.Int64
}

// deepSocketPaths are where a host daemon's sockets could sit under the
// checkout: its top, deep in its .git (past .git's own children) and a
// nested directory deeper than any bound a scan might have.
//
// They lie under the checkout (by default an overlay, which does not pass
// a connect through to the host's socket) and under the workspace root (a
// plain read-only bind in every configuration), so only the mask keeps
// the second kind out: the check can fail whatever the checkout is.
func (c *Canaries) deepSocketPaths() []string {
	return []string{
		filepath.Join(c.Checkout, "daemon.sock"),
		filepath.Join(c.Checkout, ".git", "selftest", "run", "daemon.sock"),
		filepath.Join(c.Checkout, "n", "1", "2", "3", "4", "5", "6", "7", "8", "daemon.sock"),
		filepath.Join(c.Root, ".git", "selftest", "run", "daemon.sock"),
		filepath.Join(c.Root, "n", "1", "2", "3", "4", "5", "6", "7", "8", "daemon.sock"),
	}
}

// listenDeep starts a counting, world-writable unix listener at each of
// deepSocketPaths: as when the sandbox runs as the sockets' owner, only
// the mask keeps them out.
func (c *Canaries) listenDeep() error {
	for _, p := range c.deepSocketPaths() {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		ln, err := net.Listen("unix", p)
		if err != nil {
			return fmt.Errorf("canary socket %s: %w", p, err)
		}
		l := &UnixListener{Path: p, ln: ln}
		c.DeepSockets = append(c.DeepSockets, l)
		if err := os.Chmod(p, 0o777); err != nil {
			return err
		}
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				l.hits.Add(1)
				conn.Close()
			}
		}()
	}
	return nil
}

// DeepSocketHits is each deep listener's connections since the last reset.
func (c *Canaries) DeepSocketHits() map[string]int64 {
	out := map[string]int64{}
	for _, l := range c.DeepSockets {
		out[l.Path] = l.hits.Load()
	}
	return out
}

// DeepSocketPaths lists the deep listeners' paths.
func (c *Canaries) DeepSocketPaths() []string {
	var out []string
	for _, l := range c.DeepSockets {
		out = append(out, l.Path)
	}
	return out
}

// RemoteAddrs lists the non-loopback listener addresses.
func (c *Canaries) RemoteAddrs() []string {
	var out []string
	for _, l := range c.Remote {
		out = append(out, l.Addr)
	}
	return out
}

// RemoteHits sums the non-loopback listeners' hits.
func (c *Canaries) RemoteHits() int64 {
	var n int64
	for _, l := range c.Remote {
		n += l.Hits()
	}
	return n
}

// ResetHits zeroes every listener.
func (c *Canaries) ResetHits() {
	c.Loopback.Reset()
	for _, l := range c.DeepSockets {
		l.hits.Store(0)
	}
	for _, l := range c.Remote {
		l.Reset()
	}
}
