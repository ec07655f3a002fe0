package sandboxinit

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// forwardDialTimeout bounds the dial of the proxy's socket; the proxy is
// on this machine, so a slow one is a stuck one.
const forwardDialTimeout = 10 * time.Second

// startForward listens on f.Listen (the sandbox's own loopback) and joins
// each connection to the host side's proxy at f.Socket, byte for byte:
// every decision is the proxy's, none is made here. The socket must be
// there before the holder says it is ready, or the allow-list would look
// like a network that fails; stop ends the listener and every join.
func startForward(f *protocol.Forward) (stop func(), err error) {
	fi, err := os.Stat(f.Socket)
	if err != nil {
		return nil, fmt.Errorf("the network proxy's socket: %w", err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("the network proxy's socket %s is not a socket (%s)", f.Socket, fi.Mode().Type())
	}
	// One dial now: a runtime that does not pass host sockets (gVisor's
	// default) or an identity that may not connect is a refused start,
	// not a network whose every connection closes. The proxy records
	// nothing for a connection that sends no request.
	probe, err := net.DialTimeout("unix", f.Socket, forwardDialTimeout)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to the network proxy's socket (a runtime that passes no host socket, such as gVisor's default, cannot serve an allow-list): %w", err)
	}
	_ = probe.Close()
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return nil, fmt.Errorf("the network forwarder: %w", err)
	}
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	track := func(c net.Conn, on bool) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			conns[c] = true
		} else {
			delete(conns, c)
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				time.Sleep(10 * time.Millisecond) // EMFILE and kin: the command's doing
				continue
			}
			track(c, true)
			go func() {
				defer track(c, false)
				join(c, f.Socket)
			}()
		}
	}()
	return func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for c := range conns {
			_ = c.Close()
		}
	}, nil
}

// join copies c to the proxy's socket and back until both ends are done.
func join(c net.Conn, socket string) {
	defer c.Close()
	up, err := net.DialTimeout("unix", socket, forwardDialTimeout)
	if err != nil {
		return // the client sees the connection close: refused, not hung
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		if u, ok := up.(*net.UnixConn); ok {
			_ = u.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(c, up)
	if t, ok := c.(*net.TCPConn); ok {
		_ = t.CloseWrite()
	}
	<-done
}
