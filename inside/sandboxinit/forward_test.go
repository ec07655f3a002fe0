package sandboxinit

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestForward: the forwarder joins a loopback connection to the socket
// byte for byte, and refuses to start without a socket to forward to.
func TestForward(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "proxy.sock")
	if _, err := startForward(&protocol.Forward{Listen: "127.0.0.1:0", Socket: sock}); err == nil || !strings.Contains(err.Error(), "socket") {
		t.Fatalf("a missing socket: err = %v, want a refusal naming the socket", err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := startForward(&protocol.Forward{Listen: "127.0.0.1:0", Socket: plain}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a file: err = %v, want 'not a socket'", err)
	}

	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					_, _ = c.Write([]byte("echo " + line))
				}
			}()
		}
	}()
	// A free loopback port, then released for the forwarder to take.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	stop, err := startForward(&protocol.Forward{Listen: addr, Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("CONNECT x:443 HTTP/1.1\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "echo CONNECT x:443 HTTP/1.1\n" {
		t.Fatalf("through the forwarder: %q, %v", got, err)
	}
	stop()
	if c2, err := net.Dial("tcp", addr); err == nil {
		c2.Close()
		t.Error("the forwarder still listens after stop")
	}
}
