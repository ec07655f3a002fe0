// Package progress shows one updating line for a long step (unpacking an
// image root, starting a pool) on a terminal, and nothing anywhere else:
// a pipe, a file or --json output gets no progress at all. The reporter
// travels in the context, so packages far below the CLI report without a
// global and without knowing where the line goes.
package progress

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Reporter receives the steps of long work.
type Reporter interface {
	// Step replaces the current line with what is under way now.
	Step(format string, args ...any)
	// Done ends the current line (the step finished).
	Done()
}

type ctxKey struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, ctxKey{}, r)
}

// From is ctx's reporter, or one that shows nothing.
func From(ctx context.Context) Reporter {
	if r, ok := ctx.Value(ctxKey{}).(Reporter); ok && r != nil {
		return r
	}
	return nop{}
}

type nop struct{}

func (nop) Step(string, ...any) {}
func (nop) Done()               {}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// ForTerminal is a reporter writing to f when f is a terminal and show is
// set (the CLI clears it for --json), else one that shows nothing.
func ForTerminal(f *os.File, show bool) Reporter {
	if !show || !IsTerminal(f) {
		return nop{}
	}
	return NewLine(f, 200*time.Millisecond)
}

// Line rewrites one terminal line, at most once per interval (the last
// step before Done is always shown).
type Line struct {
	w        io.Writer
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	last    time.Time
	pending string
	shown   bool
}

// NewLine is a Line on w.
func NewLine(w io.Writer, interval time.Duration) *Line {
	return &Line{w: w, interval: interval, now: time.Now}
}

// Step implements Reporter.
func (l *Line) Step(format string, args ...any) {
	msg := oneLine(fmt.Sprintf(format, args...))
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := l.now(); !l.shown || now.Sub(l.last) >= l.interval {
		l.write(msg)
		l.last = now
		l.pending = ""
		return
	}
	l.pending = msg
}

// Done implements Reporter: the pending step is shown, then the line ends.
func (l *Line) Done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending != "" {
		l.write(l.pending)
		l.pending = ""
	}
	if l.shown {
		fmt.Fprint(l.w, "\n")
		l.shown = false
	}
}

// write replaces the line: carriage return, the text, erase to its end.
func (l *Line) write(msg string) {
	fmt.Fprintf(l.w, "\r%s\x1b[K", msg)
	l.shown = true
}

// oneLine keeps a step on its line: control characters are dropped (a
// step may name an image the config chose).
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// Bytes formats n for a progress line.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Counter counts what passes through it and reports it as a step.
type Counter struct {
	R      io.Reader
	Report func(n int64)
	n      int64
}

// Read implements io.Reader.
func (c *Counter) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.n += int64(n)
	if n > 0 && c.Report != nil {
		c.Report(c.n)
	}
	return n, err
}
