// Package keeper is what crosses between `run` and a warm keeper (package
// warm): the requests to the keeper host and its replies (host.go), the
// messages on a keeper's socket (the hello a client reads first, a
// command's request, its result), and the records a keeper and its host
// keep beside their sockets. Each carries the
// protocol's version (protocol.Version) and is decoded strictly, as
// package protocol decodes a spec: a keeper outlives the build that
// started it (up to a day), so a client of another build must be told,
// not misread. It is host-side only: the inside binary never links it.
package keeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// MaxMessage bounds one message (a frame's payload).
const MaxMessage = 1 << 20

// MaxPolicy bounds a host's request (the policy of the keeper it asks
// for).
const MaxPolicy = 16 << 20

// Hello is the keeper's first message on a connection: the sandbox this
// connection uses, or why there is none. Its Protocol is what a client
// checks first of all.
type Hello struct {
	Protocol int                 `json:"protocol"`
	ID       string              `json:"id,omitempty"`
	Scratch  policy.ScratchPaths `json:"scratch"`
	// PolicyHash is the keeper's policy's WarmHash: what a client compares.
	PolicyHash string   `json:"policy_hash,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// CheckoutDiscarded: the sandbox's checkout is writable, its writes
	// discarded (backends.CheckoutDiscarded).
	CheckoutDiscarded bool `json:"checkout_discarded,omitempty"`
	// Error: the keeper could not give this connection a sandbox.
	Error string `json:"error,omitempty"`
}

// Validate implements what protocol.Versioned checks.
func (h *Hello) Validate() error {
	if h.Error == "" && (h.ID == "" || h.PolicyHash == "") {
		return errors.New("a hello names its sandbox and policy, or says why it has none")
	}
	return nil
}

// Request is one command for the keeper's sandbox.
type Request struct {
	Protocol int           `json:"protocol"`
	Argv     []string      `json:"argv"`
	Workdir  string        `json:"workdir,omitempty"`
	Timeout  time.Duration `json:"timeout_ns"`
	HasStdin bool          `json:"has_stdin"`
}

// Validate implements what protocol.Versioned checks.
func (r *Request) Validate() error {
	if len(r.Argv) == 0 || r.Argv[0] == "" {
		return errors.New("argv: empty command")
	}
	if r.Timeout < 0 {
		return fmt.Errorf("timeout_ns %d: negative", r.Timeout)
	}
	return nil
}

// Result is how a command ended.
type Result struct {
	Protocol int             `json:"protocol"`
	Result   protocol.Result `json:"result"`
	Error    string          `json:"error,omitempty"`
	// Network are the decisions of the command's network proxy (an
	// allow-list), which the keeper holds.
	Network []egress.Decision `json:"network,omitempty"`
	// NetworkDropped is how many of them did not fit in the frame.
	NetworkDropped int `json:"network_dropped,omitempty"`
}

// Validate implements what protocol.Versioned checks.
func (r *Result) Validate() error {
	if r.NetworkDropped < 0 {
		return fmt.Errorf("network_dropped %d: negative", r.NetworkDropped)
	}
	return nil
}

// Bounded is r with as many decisions as fit in one message: the proxy
// keeps up to 1000 per command, each with a name the sandbox chose.
func (r Result) Bounded() Result {
	for {
		b, err := json.Marshal(r)
		if err != nil || len(b) <= MaxMessage || len(r.Network) == 0 {
			return r
		}
		keep := len(r.Network) / 2
		r.NetworkDropped += len(r.Network) - keep
		r.Network = r.Network[:keep]
	}
}

// Encode is v (a Hello, Request, Result or Record) with this build's
// version, as JSON.
func Encode(v interface{ SetProtocol() }) ([]byte, error) {
	v.SetProtocol()
	return json.Marshal(v)
}

// SetProtocol sets this build's version (Encode calls it).
func (h *Hello) SetProtocol()   { h.Protocol = protocol.Version }
func (r *Request) SetProtocol() { r.Protocol = protocol.Version }
func (r *Result) SetProtocol()  { r.Protocol = protocol.Version }
func (r *Record) SetProtocol()  { r.Protocol = protocol.Version }

// DecodeHello reads a keeper's hello; one of another version is a
// protocol.MismatchError naming keeper (as a person reads it).
func DecodeHello(keeper string, b []byte) (Hello, error) {
	var h Hello
	return h, protocol.Versioned(keeper, b, MaxMessage, &h)
}

// DecodeRequest reads a client's request.
func DecodeRequest(b []byte) (Request, error) {
	var r Request
	return r, protocol.Versioned("the attached run", b, MaxMessage, &r)
}

// DecodeResult reads a keeper's result.
func DecodeResult(b []byte) (Result, error) {
	var r Result
	return r, protocol.Versioned("the keeper", b, MaxMessage, &r)
}

// Kind of a keeper.
const (
	KindSession = "session"
	KindPool    = "pool"
)

// Record describes a running keeper, beside its socket.
type Record struct {
	Protocol int `json:"protocol"`
	// ID names the keeper's files in the directory (warm.List fills it in).
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Name is the session's name, or a pool's (PoolName): what `session
	// end` takes.
	Name      string        `json:"name"`
	Workspace string        `json:"workspace"`
	Role      profiles.Role `json:"role"`
	Backend   string        `json:"backend"`
	Policy    string        `json:"policy_hash"`
	PID       int           `json:"pid"`
	Start     string        `json:"start"`
	Since     time.Time     `json:"since"`
	// Idle is how long nothing has used the keeper, as IdleAt computes it
	// from LastUsed and Busy ("0s" while a command runs).
	Idle string `json:"idle"`
	// WarmIdle is the setting: the keeper ends once Idle reaches it.
	WarmIdle string `json:"warm_idle"`
	// LastUsed is when the last attached run detached (Since before any);
	// Busy counts the runs attached now.
	LastUsed time.Time `json:"last_used"`
	Busy     int       `json:"busy"`
	Pool     int       `json:"pool,omitempty"`
	// Host is the key of the keeper host (package warm) this keeper runs
	// in: PID is that host's, shared by its other keepers, so the keeper
	// is ended through the host, never by a signal to PID.
	Host string `json:"host,omitempty"`
}

// Validate implements what protocol.Versioned checks.
func (r *Record) Validate() error {
	if r.Kind != KindSession && r.Kind != KindPool {
		return fmt.Errorf("kind %q: want %s or %s", r.Kind, KindSession, KindPool)
	}
	if r.PID <= 0 {
		return fmt.Errorf("pid %d: the keeper's pid is required", r.PID)
	}
	if r.Busy < 0 || r.Pool < 0 {
		return fmt.Errorf("busy %d, pool %d: negative", r.Busy, r.Pool)
	}
	if r.Host != "" && !ValidKey(r.Host) {
		return fmt.Errorf("host %q: not a host's key", r.Host)
	}
	return nil
}

// PoolName is the name `session list` shows for the role's pool and
// `session end` takes: a pool has no name of its own in the config.
func PoolName(role profiles.Role) string { return KindPool + ":" + string(role) }

// maxRecord bounds a record file.
const maxRecord = 64 << 10

// DecodeRecord reads a keeper's record. One of another version is a
// protocol.MismatchError, and the record returned holds only what tells
// whether that keeper lives and how to end it (its version, also shown as
// its policy; kind, name, workspace, pid and start; "?" where they do not
// read), so a sweep never takes the
// files of a live keeper of another build and `session list` shows it.
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	err := protocol.Versioned("the keeper's record", b, maxRecord, &r)
	var mm *protocol.MismatchError
	if !errors.As(err, &mm) {
		return r, err
	}
	var other struct {
		Kind, Name, Start, Workspace, Host string
		PID                                int
	}
	_ = json.Unmarshal(b, &other) // what does not read stays empty
	r = Record{Protocol: mm.Theirs, Kind: "?", Name: "?", Backend: "?", Policy: fmt.Sprintf("protocol %d", mm.Theirs),
		PID: other.PID, Start: other.Start, Workspace: other.Workspace}
	if other.Kind == KindSession || other.Kind == KindPool {
		r.Kind = other.Kind
	}
	if ValidKey(other.Host) {
		r.Host = other.Host // hosted: never ended by a signal to its host
	}
	if other.Name != "" && len(other.Name) < 256 && !strings.ContainsFunc(other.Name, func(c rune) bool { return c < ' ' }) {
		r.Name = other.Name
	}
	return r, err
}

// IdleAt fills in Idle as of now, and the pool's name.
func (r *Record) IdleAt(now time.Time) {
	if r.Name == "" && r.Kind == KindPool {
		r.Name = PoolName(r.Role)
	}
	last := r.LastUsed
	if last.IsZero() {
		last = r.Since
	}
	switch {
	case r.Busy > 0 || last.IsZero():
		r.Idle = "0s"
	default:
		r.Idle = max(now.Sub(last), 0).Round(time.Second).String()
	}
}

// Alive: the recorded keeper process still runs.
func (r Record) Alive() bool {
	return r.PID > 0 && r.Start != "" && ownership.ProcessStart(r.PID) == r.Start
}
