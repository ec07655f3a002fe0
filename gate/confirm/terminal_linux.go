//go:build linux

package confirm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// OpenTerminal opens the process's controlling terminal, /dev/tty, for
// reading and writing. With no controlling terminal (a daemon, CI, a
// process started with setsid) it fails with ErrNoTerminal, and the caller
// denies: confirm means "only if a human says yes", so no human means no.
func OpenTerminal() (*Asker, error) {
	fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: open /dev/tty: %w", ErrNoTerminal, err)
	}
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: /dev/tty is not a terminal: %w", ErrNoTerminal, err)
	}
	return NewAsker(os.NewFile(uintptr(fd), "/dev/tty")), nil
}

// outcomeWait bounds the best-effort write of the outcome line, which must
// not hold up a decision already made.
const outcomeWait = 250 * time.Millisecond

// errWoken says the waker fired: the context ended or SIGINT arrived.
var errWoken = errors.New("confirm: woken")

// ask runs one prompt on fd. Every return restores what it changed: the
// terminal mode, the descriptor's blocking mode, the SIGINT handler.
func (a *Asker) ask(ctx context.Context, fd int, p Prompt, countdown time.Duration) (ans Answer, err error) {
	deadline := time.Now().Add(countdown)
	// Reading or changing the mode of our controlling terminal from a
	// background process group would stop the process (SIGTTIN/SIGTTOU)
	// with the gate half open; deny instead.
	if pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pgrp != unix.Getpgrp() {
		return No, ErrBackground
	}
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return No, fmt.Errorf("%w: %w", ErrNoTerminal, err)
	}
	// Deferred first so it runs last and also when panicking: whatever
	// happens, the operator gets their terminal back as it was.
	defer func() {
		// Keys typed while the prompt was up were meant for it ("yes⏎" after
		// the "y" answered); they must not reach whoever reads next.
		_ = unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH)
		if rerr := unix.IoctlSetTermios(fd, unix.TCSETS, saved); rerr != nil && err == nil {
			ans, err = No, fmt.Errorf("confirm: restore terminal mode: %w", rerr)
		}
	}()

	restoreBlocking, err := nonBlocking(fd)
	if err != nil {
		return No, err
	}
	defer restoreBlocking()

	wk, err := newWaker(ctx)
	if err != nil {
		return No, err
	}
	defer wk.stop()

	if err := rawMode(fd, saved); err != nil {
		return No, err
	}
	shown, err := a.showPrompt(fd, wk, p, deadline)
	if err != nil {
		return No, err
	}
	return awaitAnswer(fd, wk, deadline, shown)
}

// nonBlocking makes reads and writes on fd non-blocking, so that nothing
// can sit in a system call past the countdown, whatever else reads or
// writes this terminal. restore puts the blocking mode back.
func nonBlocking(fd int) (restore func(), err error) {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, fmt.Errorf("confirm: terminal flags: %w", err)
	}
	if flags&unix.O_NONBLOCK != 0 {
		return func() {}, nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("confirm: terminal flags: %w", err)
	}
	return func() { unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags) }, nil
}

// rawMode puts the terminal in raw mode: one key answers without Enter, it
// is not echoed, Ctrl-C, Ctrl-Z and Ctrl-\ arrive as bytes (all of them
// No) instead of signals, and Ctrl-S cannot freeze the prompt. Output
// processing is off too, so the prompt's bytes (its "\r\n", the
// countdown's "\r") reach the terminal as written whatever the output
// flags were.
func rawMode(fd int, saved *unix.Termios) error {
	raw := *saved
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return fmt.Errorf("confirm: raw mode: %w", err)
	}
	return nil
}

// showPrompt writes the prompt and then discards pending input. shown is
// the count of seconds it shows.
func (a *Asker) showPrompt(fd int, wk *waker, p Prompt, deadline time.Time) (shown int, err error) {
	cols := 0
	if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
		cols = int(ws.Col)
	}
	shown = ceilSeconds(time.Until(deadline))
	if err := writeAll(fd, wk.r, deadline, renderPrompt(p, cols, shown)); err != nil {
		return 0, wk.explain(fd, err)
	}
	// Whatever was typed before the prompt was on the screen (typeahead, an
	// Enter meant for something else, injected bytes) must not answer it.
	if err := unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH); err != nil {
		return 0, fmt.Errorf("confirm: discard pending input: %w", err)
	}
	if a.shown != nil {
		a.shown()
	}
	return shown, nil
}

// awaitAnswer counts down on the prompt until a key answers it, the
// deadline passes or the waker fires.
func awaitAnswer(fd int, wk *waker, deadline time.Time, shown int) (Answer, error) {
	buf := make([]byte, 64)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return No, wk.explain(fd, ErrTimeout)
		}
		if s := ceilSeconds(left); s != shown {
			shown = s
			if err := writeAll(fd, wk.r, deadline, requestion(shown)); err != nil {
				return No, wk.explain(fd, err)
			}
		}
		// Sleep until input, the waker, or the next change of the count.
		fds := []unix.PollFd{
			{Fd: int32(fd), Events: unix.POLLIN},
			{Fd: int32(wk.r), Events: unix.POLLIN},
		}
		_, err := unix.Poll(fds, millis(left-time.Duration(shown-1)*time.Second))
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return No, fmt.Errorf("confirm: poll terminal: %w", err)
		}
		if fds[1].Revents != 0 {
			return No, wk.explain(fd, errWoken)
		}
		if fds[0].Revents == 0 {
			continue
		}
		if fds[0].Revents&unix.POLLNVAL != 0 {
			return No, fmt.Errorf("%w: descriptor not open", ErrHangup)
		}
		in, again, err := readKey(fd, buf, fds[0].Revents)
		if again {
			continue
		}
		if err != nil {
			return No, err
		}
		ans, said, err := decide(in)
		if err != nil {
			return No, wk.explain(fd, err)
		}
		finish(fd, said)
		return ans, nil
	}
}

// readKey reads what the terminal has for the prompt. again says there was
// nothing after all and the wait goes on.
func readKey(fd int, buf []byte, revents int16) (in []byte, again bool, err error) {
	n, err := unix.Read(fd, buf)
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
		if revents&(unix.POLLHUP|unix.POLLERR) != 0 {
			return nil, false, ErrHangup
		}
		return nil, true, nil // someone else took the byte
	case errors.Is(err, unix.EIO):
		return nil, false, ErrHangup
	case err != nil:
		return nil, false, fmt.Errorf("confirm: read terminal: %w", err)
	case n <= 0:
		return nil, false, ErrHangup
	}
	return buf[:n], false, nil
}

// decide maps what one read returned to an answer. Only a single byte read
// on its own counts: a human key press arrives alone, while a paste or a
// terminal's reply to a query arrives as several bytes at once, and neither
// may say yes.
func decide(in []byte) (Answer, string, error) {
	if len(in) != 1 {
		return No, "denied (several characters at once: a paste or a terminal reply is not an answer)", nil
	}
	switch in[0] {
	case 'y', 'Y':
		return Once, "allowed once", nil
	case 's', 'S':
		return Session, "allowed: this exact command line, until this run ends", nil
	case 0x03: // Ctrl-C, which raw mode delivers as a byte
		return No, "", ErrInterrupted
	}
	return No, "denied", nil
}

// explain turns why a prompt ended into the error Ask returns and tells the
// operator, best effort.
func (w *waker) explain(fd int, err error) error {
	switch {
	case errors.Is(err, errWoken):
		if w.interrupted.Load() {
			err = ErrInterrupted
		} else if cerr := w.ctx.Err(); cerr != nil {
			err = fmt.Errorf("confirm: %w", cerr)
		} else {
			err = ErrInterrupted // cannot happen: the waker fires for these two only
		}
	case errors.Is(err, ErrHangup):
		return err // nobody to tell
	}
	var said string
	switch {
	case errors.Is(err, ErrTimeout):
		said = "denied (no answer in time)"
	case errors.Is(err, ErrInterrupted):
		said = "denied (interrupted)"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		said = "denied (cancelled)"
	default:
		said = "denied (" + Sanitize(err.Error(), 200) + ")"
	}
	finish(fd, said)
	return err
}

// finish tells the operator the outcome, without waiting long for a stuck
// terminal.
func finish(fd int, said string) {
	_ = writeAll(fd, -1, time.Now().Add(outcomeWait), outcome(said))
}

// writeAll writes b to the non-blocking fd, waiting for room until deadline
// or until wake (if >= 0) becomes readable.
func writeAll(fd, wake int, deadline time.Time, s string) error {
	b := []byte(s)
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if n > 0 {
			b = b[n:]
		}
		switch {
		case err == nil, errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EIO):
			return ErrHangup
		case !errors.Is(err, unix.EAGAIN):
			return fmt.Errorf("confirm: write terminal: %w", err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return ErrTimeout
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		if wake >= 0 {
			fds = append(fds, unix.PollFd{Fd: int32(wake), Events: unix.POLLIN})
		}
		if _, err := unix.Poll(fds, millis(left)); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("confirm: poll terminal: %w", err)
		}
		if len(fds) > 1 && fds[1].Revents != 0 {
			return errWoken
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return ErrHangup
		}
	}
	return nil
}

// waker turns the end of ctx, or SIGINT, into a readable pipe, so that one
// poll waits for the operator, the countdown and both of those, and no
// goroutine is ever left blocked on the terminal.
type waker struct {
	ctx         context.Context
	r, w        int
	sig         chan os.Signal
	done        chan struct{}
	wg          sync.WaitGroup
	interrupted atomic.Bool
}

func newWaker(ctx context.Context) (*waker, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("confirm: pipe: %w", err)
	}
	w := &waker{ctx: ctx, r: p[0], w: p[1], sig: make(chan os.Signal, 1), done: make(chan struct{})}
	// Registered before the prompt is written, so a SIGINT from the moment
	// the operator can see the prompt denies rather than kills.
	signal.Notify(w.sig, os.Interrupt)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		select {
		case <-ctx.Done():
		case <-w.sig:
			w.interrupted.Store(true)
		case <-w.done:
			return
		}
		unix.Write(w.w, []byte{1})
	}()
	return w, nil
}

// stop ends the goroutine before closing the pipe it writes to, so it can
// never write to a descriptor number reused by someone else.
func (w *waker) stop() {
	signal.Stop(w.sig)
	close(w.done)
	w.wg.Wait()
	unix.Close(w.r)
	unix.Close(w.w)
}

// ceilSeconds is the count shown: 0.2s left shows as 1s, not 0s.
func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// millis is a poll timeout of at least 1ms, so a poll never spins at 0.
func millis(d time.Duration) int {
	ms := int((d + time.Millisecond - 1) / time.Millisecond)
	if ms < 1 {
		return 1
	}
	return ms
}
