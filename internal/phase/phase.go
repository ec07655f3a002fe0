// Package phase is an opt-in tracer of where a command's time goes: each
// process that has one (the CLI, a keeper) appends one JSON line per phase
// to a file, with offsets from its own start on the monotonic clock and a
// wall-clock anchor so lines of several processes can be put on one line.
//
// It is off unless TRIAGE_SANDBOX_TRACE names a file. The tracer travels in
// a context.Context; with none there, Begin and Mark cost a context lookup.
package phase

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// EnvVar names the file phases are appended to.
const EnvVar = "TRIAGE_SANDBOX_TRACE"

// Event is one line of the trace.
type Event struct {
	// Proc names the process: "cli", "keeper".
	Proc string `json:"proc"`
	PID  int    `json:"pid"`
	// Phase is the phase's name; Mark's events have no duration.
	Phase string `json:"phase"`
	// StartMS is the offset from the tracer's origin (monotonic), DurMS the
	// phase's length.
	StartMS float64 `json:"start_ms"`
	DurMS   float64 `json:"dur_ms"`
	// OriginUnixNS is the tracer's origin on the wall clock: StartMS
	// added to it places the event among other processes' events.
	OriginUnixNS int64 `json:"origin_unix_ns"`
}

// Tracer appends events to one file; safe for concurrent use.
type Tracer struct {
	proc   string
	pid    int
	origin time.Time
	mu     sync.Mutex
	f      *os.File
}

// FromEnv opens the file EnvVar names for proc, or returns nil (tracing
// off) when it is unset.
func FromEnv(proc string) (*Tracer, error) {
	path := os.Getenv(EnvVar)
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvVar, err)
	}
	return &Tracer{proc: proc, pid: os.Getpid(), origin: time.Now(), f: f}, nil
}

// Close closes the file; nil-safe.
func (t *Tracer) Close() error {
	if t == nil {
		return nil
	}
	return t.f.Close()
}

func (t *Tracer) emit(name string, start time.Time, dur time.Duration) {
	b, err := json.Marshal(Event{
		Proc: t.proc, PID: t.pid, Phase: name,
		StartMS:      ms(start.Sub(t.origin)),
		DurMS:        ms(dur),
		OriginUnixNS: t.origin.UnixNano(),
	})
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// One write per line with O_APPEND: lines of several processes do not
	// interleave. A failed write loses a trace line, never the command.
	_, _ = t.f.Write(append(b, '\n'))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type key struct{}

// With returns ctx carrying t (ctx itself when t is nil).
func With(ctx context.Context, t *Tracer) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, t)
}

// From returns ctx's tracer, or nil.
func From(ctx context.Context) *Tracer {
	t, _ := ctx.Value(key{}).(*Tracer)
	return t
}

func nop() {}

// Begin starts phase name and returns the func that ends it (and writes
// its line). With no tracer in ctx it returns a no-op.
func Begin(ctx context.Context, name string) func() {
	t := From(ctx)
	if t == nil {
		return nop
	}
	start := time.Now()
	return func() { t.emit(name, start, time.Since(start)) }
}

// Mark records an instant: phase name at this moment, no duration.
func Mark(ctx context.Context, name string) {
	if t := From(ctx); t != nil {
		t.emit(name, time.Now(), 0)
	}
}

// Span records phase name as having run from start to end: for a phase
// whose ends were observed apart from the code that records it. A zero
// start or end (never observed) records nothing.
func Span(ctx context.Context, name string, start, end time.Time) {
	if t := From(ctx); t != nil && !start.IsZero() && !end.IsZero() {
		t.emit(name, start, end.Sub(start))
	}
}
