//go:build linux

package kubecluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// The API server listens on the host's 127.0.0.1, which a pod cannot
// reach (its 127.0.0.1 is its own). On a real cluster a pod can route to
// the API server's endpoint address (the `kubernetes` Endpoints in
// default) unless a policy stops it, and the selftest's NET-41 and the
// backend's first-moments check connect to it. So the API server
// advertises BridgeAddress, and a forwarder listening there inside the
// node network namespace relays to 127.0.0.1: the endpoint a pod sees
// answers as the API server does, and stays on this machine.

// forwardAPI relays BridgeAddress:APIPort in n's network namespace to the
// API server until ctx ends.
func (c *Cluster) forwardAPI(ctx context.Context, n *Node) error {
	l, err := n.ListenTCP(net.JoinHostPort(BridgeAddress, strconv.Itoa(c.APIPort)))
	if err != nil {
		return fmt.Errorf("the API server's forwarder on the pod bridge: %w", err)
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go relay(in, net.JoinHostPort("127.0.0.1", strconv.Itoa(c.APIPort)))
		}
	}()
	return nil
}

// relay copies both ways between in and a new connection to addr.
func relay(in net.Conn, addr string) {
	defer in.Close()
	out, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	for _, p := range [][2]net.Conn{{out, in}, {in, out}} {
		go func() {
			_, _ = io.Copy(p[0], p[1])
			if tc, ok := p[0].(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			done <- struct{}{}
		}()
	}
	<-done
	<-done
}
