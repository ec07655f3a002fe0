package holderexec

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// maxEarlyStderr bounds the stderr kept while the start marker is on its way.
const maxEarlyStderr = 1 << 20

// OutputHold holds a supervisor's output back until its start marker
// (protocol.ExecStarted) arrives: what comes before it is the runtime's
// own failure text. (Not the command gate: it judges nothing.)
type OutputHold struct {
	mu     sync.Mutex
	out    io.Writer
	errOut io.Writer
	open   bool
	openAt time.Time
	before bytes.Buffer
	// beforeErr is stderr that came before the marker: a runtime copies
	// stdout and stderr apart, so the command's first stderr can overtake
	// the marker. It is passed on when the marker comes (only a started
	// supervisor sends one); a runtime's failure never opens the gate.
	beforeErr bytes.Buffer
	// Started is closed when the marker arrives.
	Started chan struct{}
}

// NewOutputHold passes output to out and errOut once the start marker came.
func NewOutputHold(out, errOut io.Writer) *OutputHold {
	return &OutputHold{out: out, errOut: errOut, Started: make(chan struct{})}
}

// Stdout is the exec's stdout.
func (g *OutputHold) Stdout() io.Writer { return gateWriter{g, false} }

// Stderr is the exec's stderr.
func (g *OutputHold) Stderr() io.Writer { return gateWriter{g, true} }

// Opened reports whether the supervisor started.
func (g *OutputHold) Opened() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// Failure is what came before the marker (the runtime's own text).
func (g *OutputHold) Failure() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.before.String()
}

// Since is the command's run time: from the supervisor's start.
func (g *OutputHold) Since() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		return 0
	}
	return time.Since(g.openAt)
}

// OpenedAt is when the start marker came; zero before.
func (g *OutputHold) OpenedAt() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.openAt
}

type gateWriter struct {
	g      *OutputHold
	stderr bool
}

func (w gateWriter) Write(p []byte) (int, error) {
	g := w.g
	g.mu.Lock()
	if !g.open {
		if !w.stderr && len(p) > 0 && p[0] == protocol.ExecStarted {
			// Under the lock, so later stderr cannot overtake it.
			if g.beforeErr.Len() > 0 {
				_, _ = g.errOut.Write(g.beforeErr.Bytes())
				g.beforeErr.Reset()
			}
			g.open, g.openAt = true, time.Now()
			close(g.Started)
			g.mu.Unlock()
			n, err := g.out.Write(p[1:])
			return n + 1, err
		}
		if room := 4096 - g.before.Len(); room > 0 {
			g.before.Write(p[:min(len(p), room)])
		}
		if room := maxEarlyStderr - g.beforeErr.Len(); w.stderr && room > 0 {
			g.beforeErr.Write(p[:min(len(p), room)])
		}
		g.mu.Unlock()
		return len(p), nil
	}
	g.mu.Unlock()
	if w.stderr {
		return g.errOut.Write(p)
	}
	return g.out.Write(p)
}
