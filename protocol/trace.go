package protocol

import (
	"errors"
	"math"
	"strings"
	"time"
)

// TraceEvent is one phase a process traced (package internal/phase): a
// line of a trace file, and what the local helper sends the host on its
// trace descriptor (protocol.Local.TraceFD), which the host relays. Its
// version is its spec's: the helper that writes it was started with a
// spec of this version, or it refused.
type TraceEvent struct {
	// Proc names the process: "cli", "keeper".
	Proc string `json:"proc"`
	PID  int    `json:"pid"`
	// Phase is the phase's name; a mark has no duration.
	Phase string `json:"phase"`
	// StartMS is the offset from the tracer's origin (monotonic), DurMS the
	// phase's length.
	StartMS float64 `json:"start_ms"`
	DurMS   float64 `json:"dur_ms"`
	// OriginUnixNS is the tracer's origin on the wall clock: StartMS
	// added to it places the event among other processes' events.
	OriginUnixNS int64 `json:"origin_unix_ns"`
}

// MaxTraceLine bounds one relayed event's line.
const MaxTraceLine = 512

// DecodeTraceEvent reads one relayed line (another process wrote it; the
// local helper's runs in the sandbox) strictly: a known shape, a phase
// name of the kind the tracer's callers use, offsets within a day of an
// origin within a day of now.
func DecodeTraceEvent(line []byte, now time.Time) (TraceEvent, error) {
	var e TraceEvent
	if err := Strict(line, MaxTraceLine, &e); err != nil {
		return TraceEvent{}, err
	}
	if !traceName(e.Phase) {
		return TraceEvent{}, errors.New("phase: want 1 to 64 of a-z, 0-9 and .+_-")
	}
	const day = 24 * time.Hour
	ok := func(v float64) bool { return !math.IsNaN(v) && v >= 0 && v <= float64(day/time.Millisecond) }
	origin := time.Unix(0, e.OriginUnixNS)
	if !ok(e.StartMS) || !ok(e.DurMS) || now.Sub(origin) >= day || origin.Sub(now) >= day {
		return TraceEvent{}, errors.New("offsets or origin out of range")
	}
	return e, nil
}

// traceName: a phase name of the kind the tracer's callers use.
func traceName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && !strings.ContainsRune(".+_-", rune(c)) {
			return false
		}
	}
	return true
}
