package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// State is what a holder (or the local helper) reports about itself.
type State string

// The states a holder reports, each on a status line of its stdout.
const (
	// StateAwaitingStage: the holder runs and waits for its staged copy
	// on stdin; nothing else runs in the sandbox yet. A pooled sandbox
	// waits so until a run takes it, and gets the copy then.
	StateAwaitingStage State = "awaiting_stage"
	// StateReady: the sandbox holds, its staged copy is in place, and it
	// takes commands.
	StateReady State = "ready"
	// StateStagingFailed: the staged copy could not be unpacked (too big,
	// too many files, a cut stream); Detail says why.
	StateStagingFailed State = "staging_failed"
	// StateHolderFailed: the holder cannot hold the sandbox at all
	// (confinement failed, it cannot sweep what commands leave behind).
	StateHolderFailed State = "holder_failed"
	// StateControlUnavailable: the holder could not dial the host's
	// control socket; the host starts commands by a runtime exec instead.
	//
	// There is no "stopped from outside" state: the holder cannot tell a
	// signal from outside from one a command sent, so it heeds none, and
	// the host tells an outside stop by its own evidence
	// (holderexec.HolderEnd).
	StateControlUnavailable State = "control_unavailable"
)

var knownStates = map[State]bool{StateAwaitingStage: true, StateReady: true, StateStagingFailed: true, StateHolderFailed: true,
	StateControlUnavailable: true}

// Status is one status line.
type Status struct {
	// Protocol is the writer's Version (WriteStatus sets it): the host
	// checks it on the holder's first status, so an inside binary of
	// another build (a kubernetes image's) is refused at start.
	Protocol int    `json:"protocol"`
	State    State  `json:"state"`
	Detail   string `json:"detail,omitempty"`
}

// statusPrefix starts every status line: a status is recognised only as a
// whole line that starts with it, never as a substring of other text.
const statusPrefix = "triage-sandbox-status "

// maxStatusLine bounds one status line.
const maxStatusLine = 2048

// WriteStatus writes s as one status line.
func WriteStatus(w io.Writer, s Status) error {
	if w == nil {
		return nil
	}
	// One line whatever the detail holds; JSON escapes newlines.
	s.Detail = truncate(s.Detail, maxStatusLine/2)
	s.Protocol = Version
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", statusPrefix, b)
	return err
}

// ParseStatus decodes one line (without its newline) as a status line. A
// line of another protocol version reads as StateHolderFailed with that
// Protocol, whatever it says (its states may mean something else here):
// the writer cannot serve this build, and Status.Mismatch says why.
func ParseStatus(line string) (Status, bool) {
	line = strings.TrimSuffix(line, "\r")
	rest, ok := strings.CutPrefix(line, statusPrefix)
	if !ok || len(line) > maxStatusLine {
		return Status{}, false
	}
	n, err := peekVersion([]byte(rest))
	if err != nil {
		return Status{}, false
	}
	if n != Version {
		return Status{Protocol: n, State: StateHolderFailed}, true
	}
	var s Status
	if err := Strict([]byte(rest), maxStatusLine, &s); err != nil || !knownStates[s.State] {
		return Status{}, false
	}
	return s, true
}

// Mismatch is nil for a status of this build's version, else the one line
// that says what to rebuild; peer names the writer ("the sandbox's holder").
func (s Status) Mismatch(peer string) error { return CheckVersion(peer, s.Protocol) }

// Statuses are the status lines found in out, in order; a line cut short
// (no newline yet) is not read, so a status is never seen half-written.
func Statuses(out []byte) []Status {
	var found []Status
	for {
		i := bytes.IndexByte(out, '\n')
		if i < 0 {
			return found
		}
		if s, ok := ParseStatus(string(out[:i])); ok {
			found = append(found, s)
		}
		out = out[i+1:]
	}
}

// First returns the first status in out whose state is one of states.
func First(out []byte, states ...State) (Status, bool) {
	for _, s := range Statuses(out) {
		for _, want := range states {
			if s.State == want {
				return s, true
			}
		}
	}
	return Status{}, false
}

// Human is out with every status line written as a person reads it, on
// one line: what a holder said, to end an error message with. Progress
// (awaiting the staged copy) is no reason for anything and is left out.
func Human(out []byte) string {
	var parts []string
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := ParseStatus(line); ok {
			if s.State == StateAwaitingStage {
				continue
			}
			line = s.String()
		}
		if t := strings.Join(strings.Fields(line), " "); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " ")
}

// String is the status as a person reads it.
func (s Status) String() string {
	if err := s.Mismatch("the holder"); err != nil {
		return err.Error()
	}
	what := map[State]string{
		StateAwaitingStage:      "awaiting the staged copy",
		StateReady:              "ready",
		StateStagingFailed:      "staging failed",
		StateHolderFailed:       "the holder cannot run",
		StateControlUnavailable: "control channel unavailable",
	}[s.State]
	if s.Detail == "" {
		return what
	}
	return what + ": " + s.Detail
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ExecStarted is the first byte the supervisor writes to its stdout, before
// the command starts: the host passes on nothing that came before it (a
// runtime's own "exec failed" text) and knows the command ran.
const ExecStarted byte = 0
