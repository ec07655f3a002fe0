// Package phase is an opt-in tracer of where a command's time goes: each
// process that has one (the CLI, a keeper) appends one JSON line per phase
// to a file, with offsets from its own start on the monotonic clock and a
// wall-clock anchor so lines of several processes can be put on one line.
//
// It is off unless TRIAGE_SANDBOX_TRACE names a file. The tracer travels in
// a context.Context; with none there, Begin and Mark cost a context lookup.
package phase

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// EnvVar names the file phases are appended to.
const EnvVar = "TRIAGE_SANDBOX_TRACE"

// Event is one line of the trace.
type Event = protocol.TraceEvent

// Tracer appends events to one file; safe for concurrent use.
type Tracer struct {
	proc   string
	pid    int
	origin time.Time
	mu     sync.Mutex
	f      io.WriteCloser
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

// ToWriter traces proc's phases to w: for a process that cannot reach the
// trace file (the local helper, in a sandbox of its own), which sends its
// lines to one that can (see Relay). Its origin is now.
func ToWriter(proc string, w io.WriteCloser) *Tracer {
	return &Tracer{proc: proc, pid: os.Getpid(), origin: time.Now(), f: w}
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

// Relay limits: what another process sends is hostile input (the local
// helper runs in the sandbox), so it is read in bounded lines, each checked.
const (
	relayMaxLines = 64
	relayMaxLine  = protocol.MaxTraceLine
)

// Relay copies the events another process traced to r (see ToWriter) into
// ctx's trace, as process proc with pid (its pid as the host sees it), until
// r ends. Lines that are not well-formed events, and any beyond the first
// relayMaxLines, are dropped. With no tracer in ctx it only drains r.
func Relay(ctx context.Context, r io.Reader, proc string, pid int) {
	t := From(ctx)
	br := bufio.NewReaderSize(io.LimitReader(r, relayMaxLines*relayMaxLine), relayMaxLine)
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return // the end, or a line too long: the rest is not read
		}
		if t == nil || n >= relayMaxLines {
			continue
		}
		e, err := protocol.DecodeTraceEvent(line, time.Now())
		if err != nil {
			continue
		}
		e.Proc, e.PID = proc, pid
		b, err := json.Marshal(e)
		if err != nil {
			continue
		}
		t.mu.Lock()
		_, _ = t.f.Write(append(b, '\n'))
		t.mu.Unlock()
	}
}
