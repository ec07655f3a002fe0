package fastpath

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// ErrFallback wraps why the keeper did not run the command (or why the
// front could not ask it): nothing ran, so the full CLI runs it.
var ErrFallback = errors.New("fast path not taken")

func fallback(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrFallback, fmt.Sprintf(format, a...))
}

// helloWait bounds the wait for a running keeper's hello: a session's is
// sent at once.
const helloWait = 5 * time.Second

// Run asks the keeper at socket to run req and relays what it sends to
// stdout and stderr; it returns `run`'s exit code. An error wrapping
// ErrFallback means nothing ran: the caller runs the full CLI. Any other
// error came after the request was sent: the command may have run, so it
// must not run again (the caller reports it, exit 125). cancel, when it
// fires, tells the keeper the front was interrupted.
func Run(ctx context.Context, socket string, req Request, cancel <-chan struct{}, stdout, stderr io.Writer) (int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return 0, fallback("no keeper at %s: %v", socket, err)
	}
	defer conn.Close()
	rb := req.Encode()
	// The request goes before the keeper's hello is read: the keeper reads
	// it after sending its hello, so the exchange costs one round trip, not
	// two. A hello that then fails the check still means nothing ran: a
	// keeper runs a request only of its own protocol version (Versioned)
	// and from its own binary (Request.CLI), and a keeper without the fast
	// path ends the connection at a frame it does not know.
	if err := WriteFrame(conn, FRequest, rb); err != nil {
		return 0, fallback("sending the request: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(helloWait))
	t, b, err := ReadFrame(conn)
	if err != nil || t != FHello {
		return 0, fallback("no hello from the keeper at %s (frame %d): %v", socket, t, err)
	}
	if err := helloVersion(b); err != nil {
		return 0, fallback("%v", err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-cancel:
			_ = WriteFrame(conn, FCancel, nil)
		case <-done:
		}
	}()
	wrote := false
	for {
		t, b, err := ReadFrame(conn)
		if err != nil {
			return 0, fmt.Errorf("warm: the keeper went away during the command: %w", err)
		}
		switch t {
		case FStdout, FStderr:
			w := stdout
			if t == FStderr {
				w = stderr
			}
			wrote = true
			if _, err := w.Write(b); err != nil && t == FStdout {
				// As the CLI: a closed stdout does not stop the command.
				stdout = io.Discard
			}
		case FExit:
			e, err := DecodeExit(b)
			if err != nil {
				return 0, err
			}
			return e.Code, nil
		case FFallback:
			f, err := DecodeFallback(b)
			if err != nil {
				return 0, err
			}
			if wrote {
				return 0, fmt.Errorf("the keeper fell back after output: %s", f.Reason)
			}
			return 0, fallback("%s", f.Reason)
		default:
			return 0, fmt.Errorf("unexpected frame %d from the keeper", t)
		}
	}
}

// helloVersion checks only the hello's protocol version: the rest is the
// attached run's, which the front does not need.
func helloVersion(b []byte) error {
	var v struct {
		Protocol int `json:"protocol"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("an unreadable hello: %v", err)
	}
	return protocol.CheckVersion("the keeper", v.Protocol)
}
