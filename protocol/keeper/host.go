package keeper

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// A keeper host (package warm) is the one process of a user, binary and
// environment that hosts every keeper: a client asks it over its control
// socket to host a keeper (HostKeep), or to end one and wait until its
// sandboxes are removed (HostEnd); one message each way per connection:
//
//	client                         host
//	  │── HostRequest{op, …} ──────▶│  peer uid checked, decoded strictly
//	  │◀───────── HostReply{error} ─│  keep: once the keeper listens
//	                                   end: once the keeper has ended
const (
	HostKeep = "keep"
	HostEnd  = "end"
)

// keyPattern is a keeper's or a host's key: what names their files in the
// keepers' directory, so never a path of its own.
var keyPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// ValidKey reports whether k can be a keeper's or a host's key.
func ValidKey(k string) bool { return keyPattern.MatchString(k) }

// HostRequest asks a keeper host to host a keeper of Policy (keep) or to
// end the keeper of Key (end).
type HostRequest struct {
	Protocol int            `json:"protocol"`
	Op       string         `json:"op"`
	Policy   *policy.Policy `json:"policy,omitempty"`
	Key      string         `json:"key,omitempty"`
}

// Validate implements what protocol.Versioned checks.
func (r *HostRequest) Validate() error {
	switch r.Op {
	case HostKeep:
		if r.Policy == nil || r.Key != "" {
			return errors.New("keep: a policy and no key")
		}
		if r.Policy.Warm.Session == "" && r.Policy.Warm.Pool == 0 {
			return errors.New("keep: the policy asks for neither a session nor a pool")
		}
	case HostEnd:
		if r.Policy != nil || !ValidKey(r.Key) {
			return fmt.Errorf("end: a key of 16 hex digits and no policy (key %q)", r.Key)
		}
	default:
		return fmt.Errorf("op %q: want %s or %s", r.Op, HostKeep, HostEnd)
	}
	return nil
}

// HostReply is the host's answer: empty when done.
type HostReply struct {
	Protocol int    `json:"protocol"`
	Error    string `json:"error,omitempty"`
	// Retry: the host is ending (it held no keeper for its grace); the
	// client starts another.
	Retry bool `json:"retry,omitempty"`
}

// Validate implements what protocol.Versioned checks.
func (r *HostReply) Validate() error {
	if r.Retry && r.Error == "" {
		return errors.New("a retry says why")
	}
	return nil
}

// HostRecord is beside a host's socket: which process it is, so a sweep
// removes a dead host's files and never a live one's.
type HostRecord struct {
	Protocol int       `json:"protocol"`
	PID      int       `json:"pid"`
	Start    string    `json:"start"`
	Since    time.Time `json:"since"`
}

// Validate implements what protocol.Versioned checks.
func (r *HostRecord) Validate() error {
	if r.PID <= 0 || r.Start == "" {
		return fmt.Errorf("pid %d, start %q: the host's pid and start are required", r.PID, r.Start)
	}
	return nil
}

func (r *HostRequest) SetProtocol() { r.Protocol = protocol.Version }
func (r *HostReply) SetProtocol()   { r.Protocol = protocol.Version }
func (r *HostRecord) SetProtocol()  { r.Protocol = protocol.Version }

// DecodeHostRequest reads a client's request to a host, strictly; a keep's
// policy is bounded as a keeper's stdin was (MaxPolicy).
func DecodeHostRequest(b []byte) (HostRequest, error) {
	var r HostRequest
	return r, protocol.Versioned("the host's client", b, MaxPolicy, &r)
}

// DecodeHostReply reads a host's reply.
func DecodeHostReply(b []byte) (HostReply, error) {
	var r HostReply
	return r, protocol.Versioned("the keeper host", b, MaxMessage, &r)
}

// DecodeHostRecord reads a host's record.
func DecodeHostRecord(b []byte) (HostRecord, error) {
	var r HostRecord
	return r, protocol.Versioned("the keeper host's record", b, maxRecord, &r)
}
