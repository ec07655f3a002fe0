//go:build linux

package confirm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// childEnv makes the test binary, re-executed, play a part in a session of
// its own instead of running the tests.
const childEnv = "CONFIRM_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "noctty":
		os.Exit(childNoCTTY())
	case "ask":
		os.Exit(childAsk())
	case "background":
		os.Exit(childBackground())
	case "sleep":
		time.Sleep(20 * time.Second)
		os.Exit(0)
	default:
		fmt.Println("unknown child", os.Getenv(childEnv))
		os.Exit(3)
	}
}

// wait bounds every wait in these tests: nothing may hang.
const wait = 5 * time.Second

// operator plays the human on the master side of a pty.
type operator struct {
	master *os.File
	fd     int

	mu  sync.Mutex
	out []byte

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func newOperator(master *os.File) *operator {
	o := &operator{master: master, fd: int(master.Fd()), stop: make(chan struct{}), done: make(chan struct{})}
	go o.read()
	return o
}

// read collects everything written to the terminal. It polls with a short
// timeout so hangup can stop it before closing the master: pty.Open leaves
// the master in blocking mode, where Close would wait for a blocked Read.
func (o *operator) read() {
	defer close(o.done)
	buf := make([]byte, 4096)
	for {
		select {
		case <-o.stop:
			return
		default:
		}
		fds := []unix.PollFd{{Fd: int32(o.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, 20); err != nil || fds[0].Revents == 0 {
			continue
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			time.Sleep(10 * time.Millisecond) // slave side closed
			continue
		}
		n, err := unix.Read(o.fd, buf)
		if n > 0 {
			o.mu.Lock()
			o.out = append(o.out, buf[:n]...)
			o.mu.Unlock()
		}
		if err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (o *operator) output() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.out)
}

func (o *operator) waitFor(t *testing.T, s string) {
	t.Helper()
	for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(o.output(), s) {
			return
		}
	}
	t.Fatalf("terminal never showed %q; got %q", s, o.output())
}

func (o *operator) send(t *testing.T, s string) {
	t.Helper()
	if _, err := unix.Write(o.fd, []byte(s)); err != nil {
		t.Fatalf("type %q: %v", s, err)
	}
}

// hangup closes the master: the terminal goes away.
func (o *operator) hangup() {
	o.once.Do(func() {
		close(o.stop)
		<-o.done
		o.master.Close()
	})
}

type fixture struct {
	a     *Asker
	op    *operator
	slave *os.File
	shown chan struct{} // one value per prompt, once input is flushed
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skip("no pty:", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{op: newOperator(master), slave: slave, shown: make(chan struct{}, 8)}
	f.a = NewAsker(slave)
	f.a.shown = func() { f.shown <- struct{}{} }
	t.Cleanup(func() {
		f.a.Close()
		f.op.hangup()
	})
	return f
}

// ready waits until the prompt is shown and typeahead discarded.
func (f *fixture) ready(t *testing.T) {
	t.Helper()
	select {
	case <-f.shown:
	case <-time.After(wait):
		t.Fatalf("prompt never shown; terminal: %q", f.op.output())
	}
}

func (f *fixture) termios(t *testing.T) unix.Termios {
	t.Helper()
	rc, err := f.slave.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var (
		tio  *unix.Termios
		terr error
	)
	if err := rc.Control(func(fd uintptr) { tio, terr = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil {
		t.Fatal(err)
	}
	if terr != nil {
		t.Fatal(terr)
	}
	return *tio
}

type result struct {
	ans  Answer
	err  error
	took time.Duration
}

func (f *fixture) askAsync(ctx context.Context, p Prompt) <-chan result {
	ch := make(chan result, 1)
	go func() {
		start := time.Now()
		ans, err := f.a.Ask(ctx, p)
		ch <- result{ans, err, time.Since(start)}
	}()
	return ch
}

func waitResult(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(wait):
		t.Fatalf("Ask did not return within %v", wait)
	}
	panic("unreachable")
}

func TestAsk(t *testing.T) {
	tests := []struct {
		name      string
		countdown time.Duration
		before    string // typed before Ask is called
		act       func(t *testing.T, f *fixture, cancel context.CancelFunc)
		want      Answer
		wantErr   error // nil: no error
		minTook   time.Duration
		maxTook   time.Duration
		hangup    bool // the terminal is gone: its mode cannot be read back
	}{
		{name: "y is once", act: typeKey("y"), want: Once},
		{name: "Y is once", act: typeKey("Y"), want: Once},
		{name: "s is session", act: typeKey("s"), want: Session},
		{name: "S is session", act: typeKey("S"), want: Session},
		{name: "n is no", act: typeKey("n"), want: No},
		{name: "Enter is no", act: typeKey("\r"), want: No},
		{name: "Escape is no", act: typeKey("\x1b"), want: No},
		{name: "other key is no", act: typeKey("q"), want: No},
		{name: "UTF-8 key is no", act: typeKey("ÿ"), want: No},
		{name: "paste is no", act: typeKey("yes"), want: No},
		{name: "terminal reply is no", act: typeKey("\x1b]l y\x1b\\"), want: No},
		{name: "Ctrl-C is no", act: typeKey("\x03"), want: No, wantErr: ErrInterrupted},
		{name: "Ctrl-Z is no", act: typeKey("\x1a"), want: No},
		{
			name: "SIGINT is no",
			act: func(t *testing.T, f *fixture, _ context.CancelFunc) {
				if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			},
			want: No, wantErr: ErrInterrupted,
		},
		{
			name: "hangup is no",
			act: func(t *testing.T, f *fixture, _ context.CancelFunc) {
				f.op.hangup()
			},
			want: No, wantErr: ErrHangup, maxTook: 2 * time.Second, hangup: true,
		},
		{
			name:      "countdown runs out",
			countdown: 300 * time.Millisecond,
			want:      No, wantErr: ErrTimeout,
			minTook: 300 * time.Millisecond, maxTook: 2 * time.Second,
		},
		{
			name: "context cancelled",
			act: func(t *testing.T, f *fixture, cancel context.CancelFunc) {
				cancel()
			},
			want: No, wantErr: context.Canceled, maxTook: time.Second,
		},
		{
			// The "y" typed before the prompt must be discarded, or the
			// answer would be Once rather than the Session typed after.
			name: "typeahead is discarded", before: "y", act: typeKey("s"), want: Session,
		},
		{name: "typed-ahead line is discarded", before: "y\r", act: typeKey("n"), want: No},
		{name: "typeahead alone times out", before: "s", countdown: 400 * time.Millisecond, want: No, wantErr: ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.before != "" {
				f.op.send(t, tt.before)
				f.op.waitFor(t, tt.before[:1]) // echoed: the line discipline has it
			}
			before := f.termios(t)
			countdown := tt.countdown
			if countdown == 0 {
				countdown = 10 * time.Second
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := f.askAsync(ctx, Prompt{Command: "rm -rf /tmp/x", Rule: "rm: deletes files", Countdown: countdown})
			f.ready(t)
			if tt.act != nil {
				tt.act(t, f, cancel)
			}
			r := waitResult(t, ch)
			if r.ans != tt.want {
				t.Errorf("answer %v, want %v (err %v)", r.ans, tt.want, r.err)
			}
			if tt.wantErr == nil && r.err != nil {
				t.Errorf("error %v, want none", r.err)
			}
			if tt.wantErr != nil && !errors.Is(r.err, tt.wantErr) {
				t.Errorf("error %v, want %v", r.err, tt.wantErr)
			}
			if r.err != nil && r.ans != No {
				t.Errorf("answer %v with error %v", r.ans, r.err)
			}
			if r.took < tt.minTook || (tt.maxTook > 0 && r.took > tt.maxTook) {
				t.Errorf("took %v, want between %v and %v", r.took, tt.minTook, tt.maxTook)
			}
			if !tt.hangup {
				if after := f.termios(t); after != before {
					t.Errorf("terminal mode not restored:\nbefore %+v\nafter  %+v", before, after)
				}
			}
		})
	}
}

func typeKey(s string) func(*testing.T, *fixture, context.CancelFunc) {
	return func(t *testing.T, f *fixture, _ context.CancelFunc) { f.op.send(t, s) }
}

func TestAskCancelledBeforeShowsNothing(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ans, err := f.a.Ask(ctx, Prompt{Command: "ls"})
	if ans != No || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v %v", ans, err)
	}
	time.Sleep(50 * time.Millisecond)
	if out := f.op.output(); out != "" {
		t.Fatalf("prompt written for a cancelled context: %q", out)
	}
}

// TestAskShowsHostileCommandInert has a command try to erase the prompt
// line, write its own question, set the title and reverse the text.
func TestAskShowsHostileCommandInert(t *testing.T) {
	f := newFixture(t)
	ch := f.askAsync(context.Background(), Prompt{Command: hostile, Rule: "sh\x1b[8m: hidden rule", Countdown: 10 * time.Second})
	f.ready(t)
	f.op.send(t, "n")
	if r := waitResult(t, ch); r.ans != No || r.err != nil {
		t.Fatalf("got %v %v", r.ans, r.err)
	}
	f.op.waitFor(t, "→ denied")
	out := f.op.output()
	for _, bad := range []string{"\x1b[2K", "\x1b]", "\a", "\u202e", "\u200b", "\x1b[1A", "\x1b[31m", "\x1b[8m"} {
		if strings.Contains(out, bad) {
			t.Errorf("terminal received %q", bad)
		}
	}
	if !utf8.ValidString(out) {
		t.Errorf("terminal received invalid UTF-8 (a raw C1 byte?): %q", out)
	}
	for _, r := range out {
		if r >= 0x80 && r <= 0x9f {
			t.Errorf("terminal received C1 control %U", r)
		}
	}
	for _, l := range frameLines(t, out) {
		if strings.ContainsAny(l, "\x1b\r") {
			t.Errorf("control in a command line: %q", l)
		}
	}
	if !strings.Contains(out, "␛[2K␍Run it? [y]es once") || !strings.Contains(out, "␛]0;title␇") {
		t.Errorf("command not shown in full: %q", out)
	}
	if !strings.Contains(out, "\x1b[1mRun it? [y]es once / [s]ession / [N]o (10s)") {
		t.Errorf("no question: %q", out)
	}
}

func TestAskCountdownUpdatesInPlace(t *testing.T) {
	f := newFixture(t)
	ch := f.askAsync(context.Background(), Prompt{Command: "ls", Countdown: 1200 * time.Millisecond})
	f.ready(t)
	r := waitResult(t, ch)
	if !errors.Is(r.err, ErrTimeout) {
		t.Fatalf("got %v %v", r.ans, r.err)
	}
	f.op.waitFor(t, "→ denied (no answer in time)")
	out := f.op.output()
	if !strings.Contains(out, question(2)) || !strings.Contains(out, requestion(1)) {
		t.Errorf("countdown not updated in place: %q", out)
	}
}

// TestAskSerialised: a second prompt waits for the first, and gives up when
// its context ends.
func TestAskSerialised(t *testing.T) {
	f := newFixture(t)
	first := f.askAsync(context.Background(), Prompt{Command: "ls", Countdown: 10 * time.Second})
	f.ready(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if ans, err := f.a.Ask(ctx, Prompt{Command: "rm -rf ~"}); ans != No || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second prompt: %v %v", ans, err)
	}
	f.op.send(t, "y")
	if r := waitResult(t, first); r.ans != Once || r.err != nil {
		t.Fatalf("first prompt: %v %v", r.ans, r.err)
	}
	if strings.Contains(f.op.output(), "rm -rf ~") {
		t.Fatal("the second prompt was shown while the first was open")
	}
}

// TestAskRestoresModeOnPanic: a panic in the middle of a prompt still gives
// the terminal back, and the Asker stays usable.
func TestAskRestoresModeOnPanic(t *testing.T) {
	f := newFixture(t)
	before := f.termios(t)
	f.a.shown = func() { panic("boom") }
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		f.a.Ask(context.Background(), Prompt{Command: "ls", Countdown: wait})
	}()
	if after := f.termios(t); after != before {
		t.Fatalf("terminal mode not restored after a panic:\nbefore %+v\nafter  %+v", before, after)
	}
	f.a.shown = func() { f.shown <- struct{}{} }
	ch := f.askAsync(context.Background(), Prompt{Command: "ls", Countdown: wait})
	f.ready(t)
	f.op.send(t, "y")
	if r := waitResult(t, ch); r.ans != Once {
		t.Fatalf("after a panic: %v %v", r.ans, r.err)
	}
}

func TestAskAfterClose(t *testing.T) {
	f := newFixture(t)
	if err := f.a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.a.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if ans, err := f.a.Ask(context.Background(), Prompt{Command: "ls"}); ans != No || !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v %v", ans, err)
	}
}

func TestDecideRemembersSession(t *testing.T) {
	f := newFixture(t)
	var m Memory
	p := Prompt{Command: Quote([]string{"rm", "-rf", "/tmp/x"}), Rule: "rm", Countdown: wait}
	done := make(chan bool, 1)
	go func() {
		ok, _ := Decide(context.Background(), f.a, &m, p)
		done <- ok
	}()
	f.ready(t)
	f.op.send(t, "s")
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("session answer denied")
		}
	case <-time.After(wait):
		t.Fatal("Decide did not return")
	}
	if !m.Allowed(p.Command) || m.Allowed("rm") || m.Allowed("rm -rf /") {
		t.Fatal("session remembered something other than the exact command line")
	}
	f.op.waitFor(t, "→ allowed: this exact command line")
	n := len(f.op.output())
	if ok, err := Decide(context.Background(), f.a, &m, p); !ok || err != nil {
		t.Fatalf("remembered command: %v %v", ok, err)
	}
	if len(f.op.output()) != n {
		t.Fatal("a session-allowed command was asked about again")
	}
}

// reexec starts this test binary as a child playing part.
func reexec(ctx context.Context, t *testing.T, part string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+part)
	return cmd
}

// TestOpenTerminalWithoutControllingTerminal runs OpenTerminal in a child
// that starts a session of its own and so has no controlling terminal.
func TestOpenTerminalWithoutControllingTerminal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	cmd := reexec(ctx, t, "noctty")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "denied:") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func childNoCTTY() int {
	a, err := OpenTerminal()
	if err == nil {
		a.Close()
		fmt.Println("opened /dev/tty without a controlling terminal")
		return 1
	}
	if !errors.Is(err, ErrNoTerminal) {
		fmt.Println("wrong error:", err)
		return 2
	}
	fmt.Println("denied:", err)
	return 0
}

// startWithTTY starts the child in a new session whose controlling
// terminal is a fresh pty, and returns the operator on its master.
func startWithTTY(t *testing.T, cmd *exec.Cmd) (*operator, *bytes.Buffer) {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skip("no pty:", err)
	}
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		master.Close()
		t.Fatal(err)
	}
	slave.Close()
	op := newOperator(master)
	t.Cleanup(op.hangup)
	return op, &out
}

// TestOpenTerminalAsks runs the whole path through /dev/tty in a child whose
// controlling terminal is a pty.
func TestOpenTerminalAsks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	cmd := reexec(ctx, t, "ask")
	op, out := startWithTTY(t, cmd)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	op.waitFor(t, "Run it? [y]es once")
	// The child flushes input after showing the prompt, so a key may be
	// discarded: type until it answers. Keys are far enough apart to be
	// read one at a time.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(2 * wait)
	for {
		select {
		case err := <-exited:
			if err != nil || !strings.Contains(out.String(), "answer=once err=<nil>") {
				t.Fatalf("child: %v\n%s\nterminal: %q", err, out, op.output())
			}
			return
		case <-tick.C:
			op.send(t, "y")
		case <-timeout:
			t.Fatal("child did not finish")
		}
	}
}

func childAsk() int {
	a, err := OpenTerminal()
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	defer a.Close()
	ans, err := a.Ask(context.Background(), Prompt{Command: "echo hi", Rule: "test", Countdown: 8 * time.Second})
	fmt.Printf("answer=%v err=%v\n", ans, err)
	return 0
}

// TestAskFromBackgroundDenies: a process that is not in its terminal's
// foreground process group is denied without touching the terminal (which
// would stop it with SIGTTOU).
func TestAskFromBackgroundDenies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	cmd := reexec(ctx, t, "background")
	op, out := startWithTTY(t, cmd)
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "background: ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if strings.Contains(op.output(), "Run it?") {
		t.Fatal("prompt shown to a background process")
	}
}

func childBackground() int {
	a, err := OpenTerminal()
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	defer a.Close()
	// Hand the terminal to another process group: a sleeping copy of us.
	sleeper := exec.Command(os.Args[0], "-test.run=^$")
	sleeper.Env = append(os.Environ(), childEnv+"=sleep")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		fmt.Println("sleeper:", err)
		return 1
	}
	defer func() {
		sleeper.Process.Kill()
		sleeper.Wait()
	}()
	if err := unix.IoctlSetPointerInt(int(a.tty.Fd()), unix.TIOCSPGRP, sleeper.Process.Pid); err != nil {
		fmt.Println("tcsetpgrp:", err)
		return 1
	}
	ans, err := a.Ask(context.Background(), Prompt{Command: "ls", Countdown: 2 * time.Second})
	if ans != No || !errors.Is(err, ErrBackground) {
		fmt.Printf("answer=%v err=%v\n", ans, err)
		return 1
	}
	fmt.Println("background: ok")
	return 0
}
