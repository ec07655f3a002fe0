package holderexec

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// script is what a fake supervisor does: whether it starts the command
// and how it ends.
type script struct {
	started bool
	failure string // what a supervisor that did not start said
	end     error
	// hold keeps it running until the run stops it (stdin closed, Stop).
	hold bool
}

// fakeProc is a scripted supervisor, with what reached its stdin.
type fakeProc struct {
	script

	mu      sync.Mutex
	input   strings.Builder
	closed  bool
	stopped bool
	release chan struct{}
}

func (f *fakeProc) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.input.Write(p)
}

func (f *fakeProc) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.release)
	}
	return nil
}

func (f *fakeProc) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	_ = f.Close()
}

func (f *fakeProc) start(_ context.Context, _ protocol.Exec, gate *OutputHold, _ *os.File) (*Started, error) {
	f.release = make(chan struct{})
	if f.started {
		_, _ = gate.Stdout().Write([]byte{protocol.ExecStarted})
	} else {
		_, _ = gate.Stderr().Write([]byte(f.failure))
	}
	wait := func() error {
		if f.hold {
			<-f.release
		}
		return f.end
	}
	return &Started{Stdin: f, Wait: wait}, nil
}

// oomCount is a sandbox's OOM count that goes up by news after the
// command; it records the settles it was asked with.
type oomCount struct {
	news    uint64
	calls   int
	settles []time.Duration
}

func (o *oomCount) kills(settle time.Duration) uint64 {
	o.calls++
	o.settles = append(o.settles, settle)
	if o.calls == 1 {
		return 5
	}
	return 5 + o.news
}

func endedSandbox() fakeSandbox {
	s := fakeSandbox{exited: make(chan struct{})}
	close(s.exited)
	return s
}

func TestRunEnds(t *testing.T) {
	tests := []struct {
		name    string
		proc    script
		ended   bool
		oomNews uint64
		// want
		code, signal  int
		oom, wholeOOM bool
		settles       []time.Duration
		errNotStarted bool
		errEndedUnder bool
		errRunning    bool
	}{
		{name: "own code", proc: script{started: true, end: &ExitStatus{Code: 3}}, code: 3},
		{name: "success", proc: script{started: true}, code: 0},
		{name: "signal, no wait for oom news", proc: script{started: true, end: &ExitStatus{Code: 143}},
			code: 143, signal: 15, settles: []time.Duration{0, 0}},
		{name: "SIGKILL, no oom", proc: script{started: true, end: &ExitStatus{Code: 137}},
			code: 137, signal: 9, settles: []time.Duration{0, oomSettle}},
		{name: "oom kill", proc: script{started: true, end: &ExitStatus{Code: 137}}, oomNews: 1,
			code: 137, signal: 9, oom: true, settles: []time.Duration{0, oomSettle}},
		{name: "own code below the signals: no oom asked", proc: script{started: true, end: &ExitStatus{Code: 1}}, oomNews: 1,
			code: 1, settles: []time.Duration{0}},
		{name: "whole sandbox oom, SIGKILL", proc: script{started: true, end: &ExitStatus{Code: 137}}, ended: true, oomNews: 1,
			code: 137, signal: 9, oom: true, wholeOOM: true},
		{name: "whole sandbox oom, other code", proc: script{started: true, end: &ExitStatus{Code: 255}}, ended: true, oomNews: 1,
			code: 137, signal: 9, oom: true, wholeOOM: true},
		{name: "sandbox ended, no oom", proc: script{started: true, end: &ExitStatus{Code: 137}}, ended: true,
			errEndedUnder: true},
		{name: "not started", proc: script{failure: "OCI runtime exec failed", end: &ExitStatus{Code: 126}},
			errNotStarted: true},
		{name: "end unknown", proc: script{started: true, end: errors.New("lost")}, errRunning: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := fakeSandbox{exited: make(chan struct{})}
			if tt.ended {
				sb = endedSandbox()
			}
			oom := &oomCount{news: tt.oomNews}
			proc := &fakeProc{script: tt.proc}
			r := Run{Policy: &policy.Policy{}, Sandbox: sb, Start: proc.start, OOMKills: oom.kills}
			res, err := r.Exec(context.Background(), backends.Command{Argv: []string{"true"}}, backends.Streams{})
			var ns *NotStarted
			switch {
			case tt.errNotStarted:
				if !errors.As(err, &ns) || ns.Why != proc.failure || !strings.Contains(err.Error(), "could not start the command") {
					t.Fatalf("err = %v, want NotStarted saying %q", err, proc.failure)
				}
				return
			case tt.errEndedUnder:
				if err == nil || !strings.Contains(err.Error(), "ended under the command") {
					t.Fatalf("err = %v, want the sandbox ended under the command", err)
				}
				return
			case tt.errRunning:
				if err == nil || !strings.Contains(err.Error(), "running the command") || errors.As(err, &ns) {
					t.Fatalf("err = %v, want running the command", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if res.ExitCode != tt.code || res.Signal != tt.signal || res.OOMKilled != tt.oom || res.WholeSandboxOOM != tt.wholeOOM {
				t.Errorf("exit %d signal %d oom %v whole %v, want %d %d %v %v",
					res.ExitCode, res.Signal, res.OOMKilled, res.WholeSandboxOOM, tt.code, tt.signal, tt.oom, tt.wholeOOM)
			}
			if tt.settles != nil && !equalDurations(oom.settles, tt.settles) {
				t.Errorf("OOMKills asked with settles %v, want %v", oom.settles, tt.settles)
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A cancelled run stops the command by Started.Stop when there is one
// (a command with input has no lifeline), by closing stdin otherwise; the
// supervisor's SIGKILL then is the cancel's, not news of an OOM kill.
func TestRunCancel(t *testing.T) {
	for _, withStop := range []bool{false, true} {
		t.Run(map[bool]string{false: "lifeline", true: "stop"}[withStop], func(t *testing.T) {
			proc := &fakeProc{script: script{started: true, hold: true, end: &ExitStatus{Code: 137}}}
			start := func(ctx context.Context, spec protocol.Exec, gate *OutputHold, exportW *os.File) (*Started, error) {
				s, err := proc.start(ctx, spec, gate, exportW)
				if withStop {
					s.Stop = proc.stop
				}
				return s, err
			}
			oom := &oomCount{}
			r := Run{Policy: &policy.Policy{}, Sandbox: fakeSandbox{exited: make(chan struct{})}, Start: start, OOMKills: oom.kills}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			res, err := r.Exec(ctx, backends.Command{Argv: []string{"sleep", "9"}}, backends.Streams{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Canceled || res.ExitCode != 130 || proc.stopped != withStop || !proc.closed {
				t.Errorf("canceled %v exit %d stopped %v stdin closed %v", res.Canceled, res.ExitCode, proc.stopped, proc.closed)
			}
			if !equalDurations(oom.settles, []time.Duration{0, 0}) {
				t.Errorf("OOMKills asked with settles %v, want no wait", oom.settles)
			}
		})
	}
}

// Input goes only to a supervisor that started the command: one that did
// not leaves it whole for the next try, and its stdin is closed once it
// ended, not when the sandbox does.
func TestRunInputOnlyToAStartedCommand(t *testing.T) {
	in := strings.NewReader("the input")
	proc := &fakeProc{script: script{failure: "exec failed", end: &ExitStatus{Code: 126}}}
	r := Run{Policy: &policy.Policy{}, Sandbox: fakeSandbox{exited: make(chan struct{})}, Start: proc.start}
	_, err := r.Exec(context.Background(), backends.Command{Argv: []string{"cat"}, Stdin: in}, backends.Streams{})
	var ns *NotStarted
	if !errors.As(err, &ns) {
		t.Fatalf("err = %v, want NotStarted", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		proc.mu.Lock()
		closed := proc.closed
		proc.mu.Unlock()
		if closed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stdin of a supervisor that never started was not closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if in.Len() != len("the input") || proc.input.Len() != 0 {
		t.Fatalf("a supervisor that never started took input: %q", proc.input.String())
	}

	in = strings.NewReader("the input")
	proc = &fakeProc{script: script{started: true, hold: true}}
	r.Start = proc.start
	if _, err := r.Exec(context.Background(), backends.Command{Argv: []string{"cat"}, Stdin: in}, backends.Streams{}); err != nil {
		t.Fatal(err)
	}
	if got := proc.input.String(); got != "the input" {
		t.Fatalf("the started command got input %q", got)
	}
}

func TestExitOf(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   int // -1: not an exit status
	}{
		{"success", "exit 0", 0},
		{"own code", "exit 3", 3},
		{"signal", "kill -TERM $$", 143},
		{"SIGKILL", "kill -KILL $$", 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ExitOf(exec.Command("sh", "-c", tt.script).Run())
			var es *ExitStatus
			switch {
			case tt.want == 0 && err != nil:
				t.Fatalf("ExitOf = %v, want nil", err)
			case tt.want != 0 && (!errors.As(err, &es) || es.Code != tt.want):
				t.Fatalf("ExitOf = %v, want exit status %d", err, tt.want)
			}
		})
	}
	other := io.ErrClosedPipe
	if err := ExitOf(other); err != other {
		t.Fatalf("ExitOf(%v) = %v, want it as it is", other, err)
	}
}

func TestSignalOf(t *testing.T) {
	for code, want := range map[int]int{0: 0, 1: 0, 124: 0, 128: 0, 129: 1, 137: 9, 143: 15, 159: 31, 160: 0, 255: 0} {
		if got := signalOf(code); got != want {
			t.Errorf("signalOf(%d) = %d, want %d", code, got, want)
		}
	}
}
