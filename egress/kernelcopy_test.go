package egress

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// connPair is a connected client and server of one kind: "unix" and "tcp"
// sockets (which the kernel splices), "pipe" (net.Pipe, which it cannot).
func connPair(t *testing.T, kind string) (client, server net.Conn) {
	t.Helper()
	if kind == "pipe" {
		return net.Pipe()
	}
	addr := "127.0.0.1:0"
	if kind == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(kind, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial(kind, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestTunnelKeepsEveryByte: a tunnel's bytes arrive whole and in order
// both ways, through the kernel (unix client, TCP upstream) and through
// the copy (a client the kernel cannot splice), including the bytes the
// proxy read ahead past the ClientHello; each is counted once.
func TestTunnelKeepsEveryByte(t *testing.T) {
	const size = 3<<20 + 17
	payload := func(seed byte) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(i*7) + seed
		}
		return b
	}
	upload, download := payload(1), payload(2)
	for _, kind := range []string{"unix", "tcp", "pipe"} {
		t.Run(kind, func(t *testing.T) {
			p := &Proxy{lim: Limits{}.withDefaults()}
			sandboxSide, proxyClient := connPair(t, kind)
			proxyUp, upstream := connPair(t, "tcp")
			up := &upConn{timedConn: timedConn{Conn: proxyUp}, p: p}
			c := &timedConn{Conn: proxyClient}

			// The client's first bytes are read ahead, as readClientHello
			// does, before the tunnel starts.
			go sandboxSide.Write(upload[:100])
			br := bufio.NewReader(c)
			if _, err := br.Peek(100); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				p.splice(c, br, up)
			}()
			// The upstream answers once it has read the whole request, as
			// a server does: the tunnel ends when the upstream is done.
			// net.Pipe has no half-close, so there it answers at once.
			gotUp := make(chan []byte, 1)
			go func() {
				var b []byte
				if kind != "pipe" {
					b, _ = io.ReadAll(upstream)
				}
				gotUp <- b
				upstream.Write(download)
				upstream.(interface{ CloseWrite() error }).CloseWrite()
			}()
			go func() {
				sandboxSide.Write(upload[100:])
				if cw, ok := sandboxSide.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
				}
			}()
			gotDown, err := io.ReadAll(sandboxSide)
			if err != nil && kind != "pipe" {
				t.Fatal(err)
			}
			if !bytes.Equal(gotDown, download) {
				t.Errorf("downloaded %d bytes, want %d, equal %v", len(gotDown), len(download), bytes.Equal(gotDown, download))
			}
			if kind != "pipe" {
				select {
				case b := <-gotUp:
					if !bytes.Equal(b, upload) {
						t.Errorf("uploaded %d bytes, want %d in order", len(b), len(upload))
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the upload never ended")
				}
				if up.up.Load() != size || up.down.Load() != size || p.bytes.Load() != 2*size {
					t.Errorf("counted up %d down %d all %d, want %d each way", up.up.Load(), up.down.Load(), p.bytes.Load(), size)
				}
			}
			<-done
		})
	}
}

// TestKernelCopyByteBound: the kernel path cuts at the run's bound, and no
// byte past it reaches the client.
func TestKernelCopyByteBound(t *testing.T) {
	const bound = 1 << 20
	p := &Proxy{lim: Limits{MaxBytes: bound}.withDefaults()}
	sandboxSide, proxyClient := connPair(t, "unix")
	proxyUp, upstream := connPair(t, "tcp")
	up := &upConn{timedConn: timedConn{Conn: proxyUp}, p: p}
	go upstream.Write(make([]byte, 4*bound))
	got := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, sandboxSide)
		got <- n
	}()
	handled, err := kernelCopy(proxyClient, proxyUp, up.received, up.busy)
	proxyClient.Close()
	if !handled || err != errByteBound {
		t.Fatalf("kernelCopy: handled %v, %v; want the byte bound", handled, err)
	}
	if n := <-got; n > bound {
		t.Errorf("%d bytes reached the client past the bound of %d", n, bound)
	}
	if !up.cut.Load() {
		t.Error("the connection was not marked cut")
	}
}
