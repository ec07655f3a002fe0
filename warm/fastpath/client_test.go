package fastpath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestRunSendsFirstAndFallsBackOnABadHello: the front sends its request
// without waiting for the hello (one round trip), and a keeper that then
// sends no hello, or one of another protocol version, is a fallback
// (nothing ran: such a keeper refuses the request itself), while a good
// hello and an Exit give the command's code.
func TestRunSendsFirstAndFallsBackOnABadHello(t *testing.T) {
	tests := []struct {
		name     string
		hello    []byte // nil: the keeper closes without one
		fallback bool
	}{
		{"no hello", nil, true},
		{"another version", fmt.Appendf(nil, `{"protocol":%d}`, protocol.Version+1), true},
		{"this version", fmt.Appendf(nil, `{"protocol":%d}`, protocol.Version), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			socket := filepath.Join(t.TempDir(), "k.sock")
			ln, err := net.Listen("unix", socket)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			keeper := make(chan error, 1)
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					keeper <- err
					return
				}
				defer conn.Close()
				// The request is there before the keeper said anything.
				if t, _, err := ReadFrame(conn); err != nil || t != FRequest {
					keeper <- fmt.Errorf("before the hello: frame %d, %v", t, err)
					return
				}
				if tc.hello != nil {
					_ = WriteFrame(conn, FHello, tc.hello)
					_ = WriteFrame(conn, FExit, fmt.Appendf(nil, `{"protocol":%d,"code":7}`, protocol.Version))
				}
				keeper <- nil
			}()
			req := Request{Args: []string{"run", "--session", "s", "--", "true"}, Cwd: "/", CLI: "x"}
			code, err := Run(context.Background(), socket, req, nil, io.Discard, io.Discard)
			if kerr := <-keeper; kerr != nil {
				t.Fatal(kerr)
			}
			switch {
			case tc.fallback && !errors.Is(err, ErrFallback):
				t.Fatalf("exit %d, %v; want a fallback", code, err)
			case !tc.fallback && (err != nil || code != 7):
				t.Fatalf("exit %d, %v; want exit 7", code, err)
			}
		})
	}
}
