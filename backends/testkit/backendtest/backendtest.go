// Package backendtest is what backends are tested with. Suite is the
// lifecycle every backend runs (docker, oci, local and kubernetes live,
// seatbelt's renderer with RenderSuite), as Nomad's DriverHarness is for
// its drivers. Backend is a fake backend for the unit tests of what drives
// backends (sandbox, warm, selftest): it runs nothing, hands out scripted
// sandboxes, and counts what it was asked to do (Start, Exec, Close), so a
// test can check that every sandbox started was closed.
package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Name is what a Backend calls itself unless told otherwise.
const Name = "fake"

// Backend is a fake backends.Backend. Set its fields before the first
// Start; SetStartErr changes the start error while starts run.
type Backend struct {
	// BackendName is what Name returns; Name ("fake") when empty.
	BackendName string
	// Caps is what Capabilities returns.
	Caps []policy.Capability
	// StartErr, when set, is what Start fails with (it still counts).
	StartErr error
	// Shared, when set, is the one sandbox every Start hands out (a test
	// scripting a single run); otherwise each Start makes a new sandbox.
	Shared *Sandbox
	// NewSandbox makes the sandbox of the n-th start (from 1) when Shared
	// is nil; by default a Sandbox with the ID "fake-<n>" and an exit 0.
	// It must not call the Backend.
	NewSandbox func(n int) *Sandbox
	// RenderFunc, when set, is what Render does (the fake renders nothing
	// otherwise).
	RenderFunc func(p *policy.Policy, cmd backends.Command) (backends.Artifact, error)
	// StartGate, when set, holds every Start until it can receive from
	// the channel or ctx ends (Start then fails with ctx's error).
	StartGate chan struct{}

	mu        sync.Mutex
	starts    int
	sweeps    int
	startOpts []backends.StartOptions
	started   []*Sandbox
}

// New is a Backend named "fake" claiming every capability the profiles
// know, handing out a new sandbox on each Start.
func New() *Backend {
	return &Backend{Caps: profiles.Capabilities()}
}

// NewShared is New handing out one scripted sandbox, sb, on every Start.
func NewShared(sb *Sandbox) *Backend {
	b := New()
	b.Shared = sb
	return b
}

// Without drops capabilities from what the fake claims to enforce.
func (b *Backend) Without(drop ...policy.Capability) *Backend {
	b.Caps = slices.DeleteFunc(slices.Clone(b.Caps), func(c policy.Capability) bool { return slices.Contains(drop, c) })
	return b
}

// SetStartErr changes what later starts fail with (nil: they succeed).
func (b *Backend) SetStartErr(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.StartErr = err
}

// Name implements backends.Backend.
func (b *Backend) Name() string {
	if b.BackendName == "" {
		return Name
	}
	return b.BackendName
}

// Capabilities implements backends.Backend.
func (b *Backend) Capabilities() []policy.Capability { return b.Caps }

// Available implements backends.Backend: the fake is always there.
func (b *Backend) Available(context.Context) error { return nil }

// Ready implements backends.Backend.
func (b *Backend) Ready(context.Context, *policy.Policy) error { return nil }

// Sweep implements backends.Backend: the fake leaves nothing to sweep; it
// counts the calls.
func (b *Backend) Sweep(context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweeps++
	return nil, nil
}

// Sweeps is how many times Sweep was called.
func (b *Backend) Sweeps() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sweeps
}

// SelfPath implements backends.Backend.
func (b *Backend) SelfPath() string { return launch.InitPath }

// Describe implements backends.Backend: a map callers may add to.
func (b *Backend) Describe(context.Context, *policy.Policy) map[string]string {
	return map[string]string{"backend": b.Name()}
}

// Render implements backends.Backend: RenderFunc, or nothing.
func (b *Backend) Render(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
	if b.RenderFunc != nil {
		return b.RenderFunc(p, cmd)
	}
	return nil, errors.New("the fake backend renders nothing")
}

// Start implements backends.Backend.
func (b *Backend) Start(ctx context.Context, _ *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	var held error
	if b.StartGate != nil {
		select {
		case <-b.StartGate:
		case <-ctx.Done():
			held = ctx.Err()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.starts++
	b.startOpts = append(b.startOpts, opts)
	if err := errors.Join(held, b.StartErr); err != nil {
		return nil, err
	}
	sb := b.Shared
	if sb == nil {
		sb = b.makeSandbox(b.starts)
	}
	if !slices.Contains(b.started, sb) {
		b.started = append(b.started, sb)
	}
	return sb, nil
}

// makeSandbox is called with b.mu held: NewSandbox must not call b.
func (b *Backend) makeSandbox(n int) *Sandbox {
	if b.NewSandbox != nil {
		return b.NewSandbox(n)
	}
	return &Sandbox{Name: fmt.Sprintf("fake-%d", n)}
}

// Starts is how many times Start was called, failed starts included.
func (b *Backend) Starts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.starts
}

// StartOptions are the options of every Start, in order.
func (b *Backend) StartOptions() []backends.StartOptions {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.startOpts)
}

// Started are the distinct sandboxes Start handed out, in order.
func (b *Backend) Started() []*Sandbox {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.started)
}

// Open are the sandboxes handed out and not closed yet: after a clean end
// there are none.
func (b *Backend) Open() []*Sandbox {
	var open []*Sandbox
	for _, sb := range b.Started() {
		if sb.Closes() == 0 {
			open = append(open, sb)
		}
	}
	return open
}

// Sandbox is a fake backends.Sandbox: Exec runs nothing, prints the
// scripted output and returns the scripted result. Set its fields before
// it is used.
type Sandbox struct {
	// Name is what ID returns.
	Name           string
	Stdout, Stderr string
	Result         backends.Result
	ExecErr        error
	CloseErr       error
	// CloseFunc, when set, is what the n-th Close (from 1) returns instead
	// of CloseErr.
	CloseFunc func(n int) error
	// Warns is what Warnings returns.
	Warns []string
	// Flood: Exec prints 64 KiB lines until ctx is done, then reports
	// Canceled (as a real backend killing the command would).
	Flood bool
	// ExecFunc, when set, is what Exec does instead of the script.
	ExecFunc func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error)
	// StageErr is what Stage returns.
	StageErr error
	// CloseEntered, when set, is closed when Close is first called; Close
	// then waits for CloseRelease (when set) before it returns.
	CloseEntered chan struct{}
	CloseRelease chan struct{}

	mu         sync.Mutex
	events     []string // "stage", "exec", "close", in order
	execs      []backends.Command
	closes     int
	floodCause error // context.Cause seen by a flood when it stopped
	flooded    int64
}

// ID implements backends.Sandbox.
func (s *Sandbox) ID() string { return s.Name }

// Scratch implements backends.Sandbox: a container's usual HOME and TMPDIR.
func (s *Sandbox) Scratch() policy.ScratchPaths {
	return policy.ScratchPaths{Home: "/home/sandbox", Tmp: "/tmp"}
}

// Warnings implements backends.Sandbox.
func (s *Sandbox) Warnings() []string { return s.Warns }

// Exec implements backends.Sandbox.
func (s *Sandbox) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	s.mu.Lock()
	s.events = append(s.events, "exec")
	s.execs = append(s.execs, cmd)
	s.mu.Unlock()
	switch {
	case s.ExecFunc != nil:
		return s.ExecFunc(ctx, cmd, out)
	case s.Flood:
		return s.floodUntilDone(ctx, out)
	}
	if s.Stdout != "" && out.Stdout != nil {
		_, _ = out.Stdout.Write([]byte(s.Stdout))
	}
	if s.Stderr != "" && out.Stderr != nil {
		_, _ = out.Stderr.Write([]byte(s.Stderr))
	}
	return s.Result, s.ExecErr
}

// Stage implements backends.Stager: it copies nothing, and records that
// it was asked.
func (s *Sandbox) Stage(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "stage")
	return s.StageErr
}

// floodUntilDone prints 64 KiB lines until ctx is cancelled; past 64 MiB
// it gives up so a broken ceiling fails the test instead of hanging it.
func (s *Sandbox) floodUntilDone(ctx context.Context, out backends.Streams) (backends.Result, error) {
	line := make([]byte, 64<<10)
	for i := range line {
		line[i] = 'x'
	}
	line[len(line)-1] = '\n'
	var n int64
	for n < 64<<20 {
		if ctx.Err() != nil {
			s.mu.Lock()
			s.floodCause, s.flooded = context.Cause(ctx), n
			s.mu.Unlock()
			return backends.Result{Canceled: true, ExitCode: 130, Sandbox: s.Name, Duration: time.Millisecond}, nil
		}
		_, _ = out.Stdout.Write(line)
		n += int64(len(line))
	}
	return backends.Result{Sandbox: s.Name}, errors.New("flood: the context was never cancelled")
}

// Close implements backends.Sandbox. Unlike a real sandbox it counts every
// call, so a test sees a double close.
func (s *Sandbox) Close(context.Context) error {
	s.mu.Lock()
	s.events = append(s.events, "close")
	s.closes++
	n, first := s.closes, s.closes == 1
	entered, release := s.CloseEntered, s.CloseRelease
	s.mu.Unlock()
	if entered != nil && first {
		close(entered)
	}
	if release != nil {
		<-release
	}
	if s.CloseFunc != nil {
		return s.CloseFunc(n)
	}
	return s.CloseErr
}

// Record is what was asked of the sandbox: its events ("stage", "exec",
// "close") in order, the commands it was given and how many times it was
// closed.
func (s *Sandbox) Record() (events []string, execs []backends.Command, closes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events), slices.Clone(s.execs), s.closes
}

// Execs are the commands the sandbox was given.
func (s *Sandbox) Execs() []backends.Command {
	_, execs, _ := s.Record()
	return execs
}

// Closes is how many times Close was called.
func (s *Sandbox) Closes() int {
	_, _, n := s.Record()
	return n
}

// Flooded is what a Flood saw when it stopped: the context's cause and
// how many bytes it had printed.
func (s *Sandbox) Flooded() (cause error, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.floodCause, s.flooded
}
