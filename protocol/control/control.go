// Package control is the channel between triage-sandbox and a sandbox's
// holder: the host asks the holder to start the in-sandbox supervisor with
// descriptors it passes along (stdin, stdout, stderr, the export pipe), and
// the holder reports the supervisor's pid and, later, how it ended.
//
// Starting a command this way costs one fork in the sandbox instead of a
// runtime exec (a new runtime process, a namespace join, a fresh init), and
// the command inherits everything the holder was confined with, including
// what a runtime's exec path does not re-apply (gVisor's in-sandbox
// seccomp). The channel is a SOCK_SEQPACKET socket pair: one message per
// request or reply, descriptors as SCM_RIGHTS. Only the host holds the
// other end. Both directions are decoded by protocol.Strict; the version is
// the holder's, checked on its status before the channel is used.
package control

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// maxMessage bounds one message (an argv with its arguments).
const maxMessage = 1 << 20

// maxFiles is how many descriptors a request may carry.
const maxFiles = 8

// request asks the holder to start a process.
type request struct {
	ID   uint64   `json:"id"`
	Argv []string `json:"argv"`
	// Dir and Env, when set, replace the holder's own.
	Dir string   `json:"dir,omitempty"`
	Env []string `json:"env,omitempty"`
}

// reply answers a request: first Started (or Error), then Exited.
type reply struct {
	ID      uint64 `json:"id"`
	PID     int    `json:"pid,omitempty"`
	Error   string `json:"error,omitempty"`
	Exited  bool   `json:"exited,omitempty"`
	Code    int    `json:"code,omitempty"`
	Signal  int    `json:"signal,omitempty"`
	Started bool   `json:"started,omitempty"`
}

// Exit is how a started process ended.
type Exit struct {
	// Code is shell-style: the exit status, or 128+N when killed by signal N.
	Code   int
	Signal int
}

// ErrClosed: the channel ended (the holder is gone or the host closed it).
var ErrClosed = errors.New("the sandbox's control channel is closed")

func encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) > maxMessage {
		return nil, fmt.Errorf("control message of %d bytes is over the %d-byte bound", len(b), maxMessage)
	}
	return b, nil
}

// decodeReply reads one reply the holder sent: strictly (no unknown
// fields, nothing after it), with a shell-style code and a signal in
// range, since a holder shares its sandbox with whatever ran there.
func decodeReply(b []byte) (reply, error) {
	var r reply
	if err := protocol.Strict(b, maxMessage, &r); err != nil {
		return reply{}, err
	}
	switch {
	case r.Code < 0 || r.Code > 255:
		return reply{}, fmt.Errorf("exit code %d out of range", r.Code)
	case r.Signal < 0 || r.Signal > 64:
		return reply{}, fmt.Errorf("signal %d out of range", r.Signal)
	case r.PID < 0:
		return reply{}, fmt.Errorf("pid %d out of range", r.PID)
	}
	return r, nil
}
