package confirm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Answer is the operator's decision. The zero value is No, so a forgotten
// assignment or an early return denies.
type Answer int

const (
	// No denies the command. It is the answer to everything that is not an
	// explicit yes.
	No Answer = iota
	// Once allows this one run.
	Once
	// Session allows this run and, through Memory, later runs of exactly the
	// same command line until the process exits.
	Session
)

func (a Answer) String() string {
	switch a {
	case No:
		return "no"
	case Once:
		return "once"
	case Session:
		return "session"
	}
	return fmt.Sprintf("Answer(%d)", int(a))
}

// DefaultCountdown is how long the operator has to answer when
// Prompt.Countdown is not set.
const DefaultCountdown = 30 * time.Second

// Prompt is what the operator is asked about.
type Prompt struct {
	// Command is the full command as it will run: argv joined shell-quoted
	// (see Quote). It is shown through Sanitize, up to CommandMax runes.
	Command string
	// Rule is the rule's name and reason, shown so the operator knows why
	// they are asked.
	Rule string
	// Countdown is how long the operator has; when it runs out the answer is
	// No. Zero or negative means DefaultCountdown.
	Countdown time.Duration
}

// Errors that explain a No. Ask wraps them; test with errors.Is. A
// cancelled context is reported as the context's own error.
var (
	ErrNoTerminal  = errors.New("confirm: no controlling terminal")
	ErrBackground  = errors.New("confirm: process is not in the terminal's foreground process group")
	ErrTimeout     = errors.New("confirm: no answer before the countdown ran out")
	ErrInterrupted = errors.New("confirm: interrupted")
	ErrHangup      = errors.New("confirm: terminal closed or hung up")
	ErrClosed      = errors.New("confirm: asker closed")
)

// Asker asks on one terminal. Asks are serialised: two prompts interleaved
// on one terminal would let a key meant for one answer the other. Create it
// with OpenTerminal or NewAsker; the zero value is not usable.
type Asker struct {
	tty *os.File
	// sem is held for the whole of an Ask and by Close. A channel rather
	// than a mutex so a waiting Ask gives up when its context ends.
	sem    chan struct{}
	closed bool // guarded by sem
	// shown, when set, is called once the prompt is on the terminal and
	// pending input has been discarded: tests type their answer only then,
	// since a key sent earlier is (rightly) thrown away.
	shown func()
}

// NewAsker returns an Asker that uses tty, which must be a terminal opened
// for reading and writing. It takes ownership: Close closes tty. Tests pass
// the slave side of a pty.
func NewAsker(tty *os.File) *Asker {
	return &Asker{tty: tty, sem: make(chan struct{}, 1)}
}

// Ask shows p on the terminal and waits for a single key: y or Y is Once,
// s or S is Session, anything else is No. Every error comes with No: a
// context that is done (before or during the prompt), SIGINT or Ctrl-C, end
// of input or hang-up, the countdown running out, or any failure to use the
// terminal. The terminal's mode is restored before Ask returns, on every
// path. While Ask runs, SIGINT is caught and denies instead of killing the
// process.
func (a *Asker) Ask(ctx context.Context, p Prompt) (Answer, error) {
	if a == nil || a.sem == nil || a.tty == nil {
		return No, ErrNoTerminal
	}
	// A cancelled context denies before anything is shown.
	if err := ctx.Err(); err != nil {
		return No, fmt.Errorf("confirm: %w", err)
	}
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return No, fmt.Errorf("confirm: waiting for another prompt: %w", ctx.Err())
	}
	defer func() { <-a.sem }()
	if a.closed {
		return No, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return No, fmt.Errorf("confirm: %w", err)
	}
	countdown := p.Countdown
	if countdown <= 0 {
		countdown = DefaultCountdown
	}

	// Control (rather than Fd) keeps the descriptor's blocking mode as the
	// runtime set it and holds a reference so it cannot be closed under us.
	rc, err := a.tty.SyscallConn()
	if err != nil {
		return No, fmt.Errorf("%w: %w", ErrNoTerminal, err)
	}
	var (
		ans    Answer
		askErr error
	)
	if err := rc.Control(func(fd uintptr) {
		ans, askErr = a.ask(ctx, int(fd), p, countdown)
	}); err != nil {
		return No, fmt.Errorf("%w: %w", ErrNoTerminal, err)
	}
	if askErr != nil {
		return No, askErr
	}
	return ans, nil
}

// Close closes the terminal. It waits for an Ask in progress to finish,
// which takes at most that prompt's countdown.
func (a *Asker) Close() error {
	if a == nil || a.sem == nil {
		return nil
	}
	a.sem <- struct{}{}
	defer func() { <-a.sem }()
	if a.closed {
		return nil
	}
	a.closed = true
	if a.tty == nil {
		return nil
	}
	if err := a.tty.Close(); err != nil {
		return fmt.Errorf("confirm: close terminal: %w", err)
	}
	return nil
}

// Decide applies a confirm rule to p.Command in the gate's order and
// reports whether the command may run:
//
//  1. a context that is done denies, even a session-allowed command;
//  2. a command line allowed for the session (m.Allowed(p.Command)) runs
//     without asking;
//  3. no terminal (a nil Asker, as when OpenTerminal failed) denies before
//     any prompt;
//  4. otherwise the operator is asked; Session is remembered in m for exactly
//     p.Command.
//
// p.Command must therefore be the normalised command line (Quote of argv).
// m may be nil: then nothing is remembered.
func Decide(ctx context.Context, a *Asker, m *Memory, p Prompt) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("confirm: %w", err)
	}
	if m.Allowed(p.Command) {
		return true, nil
	}
	if a == nil {
		return false, ErrNoTerminal
	}
	ans, err := a.Ask(ctx, p)
	if err != nil {
		return false, err
	}
	switch ans {
	case Once:
		return true, nil
	case Session:
		m.Remember(p.Command)
		return true, nil
	}
	return false, nil
}
