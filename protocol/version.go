package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Version is the protocol this build speaks: carried in every spec's
// envelope, every status line and a keeper's hello. Both ends ship in one
// build, so there is no compatibility to keep, only a mismatch to detect:
// raise it whenever a message of this package changes shape or meaning.
// Builds before versions spoke 0 (no field).
const Version = 3

// VersionKey is the one JSON key every version keeps, at the top of every
// versioned message, so any build reads another's version before anything
// else of the message.
const VersionKey = "protocol"

// rebuild is what to do about a mismatch.
const rebuild = "rebuild both from one checkout (or `triage-sandbox session end` the sessions started before the upgrade)"

// MismatchError is a message of another protocol version: it is never
// read further, since its fields may mean something else.
type MismatchError struct {
	// Peer says who sent it, as a person reads it ("the sandbox's holder").
	Peer string
	// Theirs is the version the message carries.
	Theirs int
	// Inside: this process is the inside binary, reading a spec.
	Inside bool
}

// self names this binary in a mismatch, as the one to rebuild.
func self() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}

func (e *MismatchError) Error() string {
	if e.Inside {
		return fmt.Sprintf("%s speaks protocol %d, this inside binary %s speaks %d: %s", e.Peer, e.Theirs, self(), Version, rebuild)
	}
	return fmt.Sprintf("%s speaks protocol %d, this triage-sandbox speaks %d: %s", e.Peer, e.Theirs, Version, rebuild)
}

// CheckVersion is nil when theirs is Version, else a MismatchError from peer
// (read by the host side).
func CheckVersion(peer string, theirs int) error {
	if theirs == Version {
		return nil
	}
	return &MismatchError{Peer: peer, Theirs: theirs}
}

// peekVersion reads only VersionKey from a JSON object (0 when absent), so
// a message of another version is named as such, not as a bad message.
func peekVersion(b []byte) (int, error) {
	var v struct {
		Protocol int `json:"protocol"`
	}
	// The first value only: what follows it is Strict's to refuse.
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&v); err != nil {
		return 0, err
	}
	return v.Protocol, nil
}
