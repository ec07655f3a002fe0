// Package protocol is everything that crosses between triage-sandbox on the
// host and its own binary started inside (or beside) a sandbox: which entry
// point runs, the typed spec it runs with, and the typed frames it answers
// with. The host side (backends, warm, selftest) encodes; the sandbox side
// (cmd's entry dispatch, sandboxinit, the local helper) decodes. Neither
// side imports the other; both import this.
//
// The wire is plain: an entry point is started as `BINARY ENTRY SPEC`, where
// SPEC is one argv element holding {"protocol":Version,"spec":…} as JSON.
// The version is read first: a message of another build is a
// MismatchError, never read further. Decoding is strict (Strict: unknown
// fields, trailing data, over a bound; then bad paths and descriptors are
// errors), because on the host side some of what is decoded was written by
// the sandbox, and on the sandbox side a bad spec must refuse, not guess.
// The keeper's messages are in keeper/, the local helper's plan in
// localplan/, the control channel in control/.
package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Entry names a hidden entry point of the triage-sandbox binary.
type Entry string

// The entry points. Each takes exactly one argument, its spec, except
// ProbeChild, whose arguments are the probe's own (see package probe).
const (
	// EntryHold keeps a started container sandbox alive (the holder).
	EntryHold Entry = "__hold"
	// EntryExec runs one command under the supervisor.
	EntryExec Entry = "__exec"
	// EntryExport writes the staged writable paths for the copy back.
	EntryExport Entry = "__export"
	// EntryUnpack unpacks a copy of read-only directories from its stdin
	// (a pod's init container: the kubernetes backend's workspace).
	EntryUnpack Entry = "__unpack"
	// EntryLocal is the local backend's helper: confine, then hold.
	EntryLocal Entry = "__local"
	// EntryKeeper is a session's or pool's keeper on the host.
	EntryKeeper Entry = "__warm"
	// EntryWatch is the docker backend's watcher on the host, one per
	// owner process: it removes the owner's containers when it dies.
	EntryWatch Entry = "__watch"
	// EntryWatchRemove is what a watcher starts once the owner is gone: it
	// removes the containers listed on its stdin (the CLI's binary, with
	// the Docker client).
	EntryWatchRemove Entry = "__watch-remove"
	// EntryProbe runs a selftest probe plan.
	EntryProbe Entry = "__probe"
	// EntryProbeChild is a probe's helper process (positional arguments).
	EntryProbeChild Entry = "__probe-child"
)

// Entries lists every entry point, for the dispatcher and its tests.
func Entries() []Entry {
	return []Entry{EntryHold, EntryExec, EntryExport, EntryUnpack, EntryLocal, EntryKeeper, EntryWatch, EntryWatchRemove, EntryProbe, EntryProbeChild}
}

// IsEntry reports whether arg names an entry point.
func IsEntry(arg string) bool {
	for _, e := range Entries() {
		if string(e) == arg {
			return true
		}
	}
	return false
}

// maxSpec bounds one encoded spec (an argv with its arguments, the staged
// paths): well under the kernel's argument limits.
const maxSpec = 1 << 20

// envelope carries every spec with the version it is written in.
type envelope struct {
	Protocol int             `json:"protocol"`
	Spec     json.RawMessage `json:"spec"`
}

// Argv is the argv that starts entry e of the binary at bin with spec,
// in its envelope (this build's Version).
func Argv(bin string, e Entry, spec any) ([]string, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s spec: %w", e, err)
	}
	b, err := json.Marshal(envelope{Protocol: Version, Spec: raw})
	if err != nil {
		return nil, fmt.Errorf("encoding the %s spec: %w", e, err)
	}
	if len(b) > maxSpec {
		return nil, fmt.Errorf("the %s spec is %d bytes, over the %d-byte bound", e, len(b), maxSpec)
	}
	return []string{bin, string(e), string(b)}, nil
}

// MustArgv is Argv for specs that always encode (no channels, no funcs, a
// bounded size); it panics otherwise, which is a programming error.
func MustArgv(bin string, e Entry, spec any) []string {
	argv, err := Argv(bin, e, spec)
	if err != nil {
		panic(err)
	}
	return argv
}

// decode reads one spec argument strictly into v: its envelope's version
// first (another is a MismatchError, the spec not read further), then the
// spec, then v's own checks.
func decode(e Entry, args []string, v interface{ validate() error }) error {
	if len(args) != 1 {
		return fmt.Errorf("%s takes one argument, its spec as JSON; got %d", e, len(args))
	}
	if len(args[0]) > maxSpec {
		return fmt.Errorf("%s: spec of %d bytes is over the %d-byte bound", e, len(args[0]), maxSpec)
	}
	b := []byte(args[0])
	n, err := peekVersion(b)
	if err != nil {
		return fmt.Errorf("%s: bad spec: %w", e, err)
	}
	if n != Version {
		return &MismatchError{Peer: fmt.Sprintf("the triage-sandbox that started %s", e), Theirs: n, Inside: true}
	}
	var env envelope
	if err := Strict(b, maxSpec, &env); err != nil {
		return fmt.Errorf("%s: bad spec: %w", e, err)
	}
	if env.Spec == nil {
		return fmt.Errorf("%s: bad spec: no \"spec\" in the envelope", e)
	}
	if err := Strict(env.Spec, maxSpec, v); err != nil {
		return fmt.Errorf("%s: bad spec: %w", e, err)
	}
	if err := v.validate(); err != nil {
		return fmt.Errorf("%s: %w", e, err)
	}
	return nil
}

// Strict decodes b, one JSON value of at most max bytes, into v: a field v
// does not have, data after the value, or more than max bytes is an error.
// Every message between our processes is decoded by it (here and in the
// sub-packages), since the other side may be the sandbox's.
func Strict(b []byte, max int, v any) error {
	if len(b) > max {
		return fmt.Errorf("%d bytes, over the %d-byte bound", len(b), max)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// Versioned decodes b, a message of peer that carries VersionKey among its
// fields, strictly into v: another version is a MismatchError (read no
// further), then v.Validate checks what JSON cannot say.
func Versioned(peer string, b []byte, max int, v interface{ Validate() error }) error {
	if len(b) > max {
		return fmt.Errorf("%s: a message of %d bytes, over the %d-byte bound", peer, len(b), max)
	}
	n, err := peekVersion(b)
	if err != nil {
		return fmt.Errorf("%s: unreadable message: %w", peer, err)
	}
	if err := CheckVersion(peer, n); err != nil {
		return err
	}
	if err := Strict(b, max, v); err != nil {
		return fmt.Errorf("%s: bad message: %w", peer, err)
	}
	if err := v.Validate(); err != nil {
		return fmt.Errorf("%s: %w", peer, err)
	}
	return nil
}

// Duration is a time.Duration written as Go writes it ("1m30s"), so a
// rendered spec reads as a person would write it.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("negative duration %q", s)
	}
	*d = Duration(v)
	return nil
}

// D is the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// checkFD accepts 0 (none) or an inherited descriptor above stderr.
func checkFD(name string, fd int) error {
	if fd != 0 && fd < 3 {
		return fmt.Errorf("%s %d: must be an inherited descriptor above stderr", name, fd)
	}
	return nil
}

var errNoArgv = errors.New("empty command")

// InitPath is where container backends mount the static triage-sandbox
// binary: the sandbox's holder, supervisor and exporter.
const InitPath = "/.triage-sandbox/triage-sandbox"
