//go:build unix

package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
)

// Listener is a host socket a holder dials into when no descriptor can be
// passed to it (a container the daemon starts): bound into the sandbox
// read-only, it accepts exactly one connection, the holder's, made before
// anything else in the sandbox runs, and then disappears.
type Listener struct {
	Path string // the socket, in a directory of its own
	ln   *net.UnixListener
}

// Listen makes the socket in a fresh directory under parent, owned by uid
// (the sandbox identity, which the holder runs as). The directories are
// this user's alone: the socket is reachable only where it is bound in.
func Listen(parent string, uid, gid int) (*Listener, error) {
	if err := hostfs.PrivateDir(parent); err != nil {
		return nil, fmt.Errorf("the control socket's directory: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "ctl-")
	if err != nil {
		return nil, fmt.Errorf("the control socket's directory: %w", err)
	}
	path := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("the control socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	// The directory is bound into the sandbox (so the socket's removal
	// shows there): the holder's identity must be able to enter it.
	err = os.Chmod(path, 0o600)
	if err == nil && os.Geteuid() == 0 {
		err = os.Chown(path, uid, gid)
		if err == nil {
			err = os.Chown(dir, uid, gid)
		}
	}
	if err != nil {
		_ = ln.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("the control socket: %w", err)
	}
	return &Listener{Path: path, ln: ln}, nil
}

// Accept waits for the holder's connection until ctx ends, then stops
// listening and removes the socket: no later connection can be made.
func (l *Listener) Accept(ctx context.Context) (*Client, error) {
	defer l.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = l.ln.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = l.ln.SetDeadline(time.Now()) })
	defer stop()
	conn, err := l.ln.AcceptUnix()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the holder did not connect: %w", ctx.Err())
		}
		return nil, fmt.Errorf("the holder did not connect: %w", err)
	}
	return NewClientConn(conn), nil
}

// Close stops listening and removes the socket and its directory.
func (l *Listener) Close() error {
	err := l.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return errors.Join(err, os.RemoveAll(filepath.Dir(l.Path)))
}

// Dial is the holder's side: connect to the socket bound in at path.
func Dial(path string) (*net.UnixConn, error) {
	return net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
}
