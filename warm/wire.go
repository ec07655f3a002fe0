// Package warm keeps started sandboxes for later commands: an agent's named
// session (one sandbox for all its commands) and a pool of started
// reproducer sandboxes (each used for exactly one command). A keeper owns
// them, so they outlive the one-shot `run` that started them; `run`
// attaches to it over a unix socket that only its user can reach. Every
// keeper of a user (of one binary and environment) runs in one keeper host
// process (host.go).
// The gate, the output pipeline and the audit record stay in `run`: the
// keeper only starts sandboxes and runs commands in them.
package warm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	kmsg "github.com/triage-sandbox/triage-sandbox/protocol/keeper"
)

// frame types, one byte before each frame's length and payload.
const (
	fHello    byte = 1 // keeper → run: the sandbox this connection uses
	fRequest  byte = 2 // run → keeper: a command
	fStdin    byte = 3 // run → keeper: command input
	fStdinEOF byte = 4
	fStdout   byte = 5 // keeper → run: command output
	fStderr   byte = 6
	fResult   byte = 7 // keeper → run: how the command ended
	fEnd      byte = 8 // run → keeper: end the session (or pool) now
)

// maxFrame bounds one frame's payload.
const maxFrame = kmsg.MaxMessage

// The messages, typed and decoded in protocol/keeper.
type (
	hello   = kmsg.Hello
	request = kmsg.Request
	result  = kmsg.Result
)

func writeFrame(w io.Writer, t byte, payload []byte) error {
	if len(payload) > maxFrame {
		return fmt.Errorf("warm: a frame of %d bytes is over the %d-byte bound", len(payload), maxFrame)
	}
	// One write per frame: the reader wakes once for it, not once for its
	// header and again for its payload.
	b := make([]byte, 5, 5+len(payload))
	b[0] = t
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	_, err := w.Write(append(b, payload...))
	return err
}

func writeJSON(w io.Writer, t byte, v interface{ SetProtocol() }) error {
	b, err := kmsg.Encode(v)
	if err != nil {
		return err
	}
	return writeFrame(w, t, b)
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, errors.New("warm: a frame over the bound; the other side is not a triage-sandbox keeper")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return hdr[0], b, nil
}

// frameWriter sends what is written to it as frames of one type.
type frameWriter struct {
	send func(t byte, b []byte) error
	t    byte
}

func (f frameWriter) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += maxFrame {
		end := min(off+maxFrame, len(p))
		if err := f.send(f.t, p[off:end]); err != nil {
			return off, err
		}
	}
	return len(p), nil
}
