package sandboxinit

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// TestHold: each way a sandbox must end kills everything once and ends
// with the code and line that say why; nothing else ends it.
func TestHold(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(o *HoldOptions) (trigger func())
		wantCode int
		wantLine string
	}{
		{name: "lifeline cut", setup: func(o *HoldOptions) func() {
			r, w := io.Pipe()
			o.Lifeline = r
			return func() { _ = w.Close() }
		}, wantCode: ExitLifelineCut},
		{name: "ttl", setup: func(o *HoldOptions) func() {
			o.TTL = 500 * time.Millisecond
			return func() {}
		}, wantCode: ExitTTL, wantLine: "lifetime exceeded"},
		// A pooled sandbox waits for its staged copy until a run takes it:
		// its lifetime ends that wait as it ends the sandbox.
		{name: "ttl while awaiting the staged copy", setup: func(o *HoldOptions) func() {
			awaitCopy(t, o)
			o.TTL = 500 * time.Millisecond
			return func() {}
		}, wantCode: ExitTTL, wantLine: "lifetime exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var killed atomic.Int32
			var stderr bytes.Buffer
			o := HoldOptions{Stderr: &stderr, KillAll: func() { killed.Add(1) }}
			trigger := tt.setup(&o)
			done := make(chan int, 1)
			go func() { done <- Hold(context.Background(), o) }()
			// Nothing ends it before the trigger.
			select {
			case code := <-done:
				t.Fatalf("ended early with %d", code)
			case <-time.After(100 * time.Millisecond):
			}
			trigger()
			select {
			case code := <-done:
				if code != tt.wantCode {
					t.Errorf("exit %d, want %d", code, tt.wantCode)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("hold did not end")
			}
			if killed.Load() != 1 {
				t.Errorf("killAll called %d times", killed.Load())
			}
			if tt.wantLine == "" && stderr.Len() > 0 {
				t.Errorf("unexpected output %q", stderr.String())
			}
			if tt.wantLine != "" && !strings.Contains(stderr.String(), tt.wantLine) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.wantLine)
			}
		})
	}
}

// TestHoldRefusesSignals: no catchable signal ends the holder or crashes
// it, ready or awaiting its staged copy: a command sends the holder (pid 1)
// what it likes, and the Go runtime's handler would have it delivered.
// Only the lifeline (or SIGKILL, from outside) ends it.
func TestHoldRefusesSignals(t *testing.T) {
	for _, awaiting := range []bool{false, true} {
		t.Run(map[bool]string{false: "ready", true: "awaiting the staged copy"}[awaiting], func(t *testing.T) {
			var killed atomic.Int32
			var out lockedBuffer
			o := HoldOptions{Stderr: &out, Stdout: &out, KillAll: func() { killed.Add(1) }}
			want := protocol.StateReady
			if awaiting {
				awaitCopy(t, &o)
				want = protocol.StateAwaitingStage
			}
			lifeline := o.Lifeline
			cut := func() {}
			if lifeline == nil {
				r, w := io.Pipe()
				o.Lifeline, cut = r, func() { _ = w.Close() }
			}
			done := make(chan int, 1)
			go func() { done <- Hold(context.Background(), o) }()
			if !testenv.Eventually(5*time.Second, func() bool { _, ok := protocol.First(out.Bytes(), want); return ok }) {
				t.Fatalf("the holder did not say %s: %q", want, out.Bytes())
			}
			for _, s := range refusedSignals {
				if err := syscall.Kill(os.Getpid(), s.(syscall.Signal)); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case code := <-done:
				t.Fatalf("a signal ended the holder with %d: %q", code, out.Bytes())
			case <-time.After(300 * time.Millisecond):
			}
			if killed.Load() != 0 {
				t.Fatalf("a signal made the holder kill everything: %q", out.Bytes())
			}
			if awaiting {
				o.Lifeline.(*io.PipeReader).Close()
			} else {
				cut()
			}
			select {
			case code := <-done:
				if code != ExitLifelineCut && !(awaiting && code == exitcodeRefused) {
					t.Errorf("exit %d after the lifeline was cut", code)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("hold did not end at the lifeline's cut")
			}
		})
	}
}

// awaitCopy gives o a staged directory and a lifeline that never brings
// its copy.
func awaitCopy(t *testing.T, o *HoldOptions) {
	r, w := io.Pipe()
	t.Cleanup(func() { _ = w.Close() })
	o.Lifeline = r
	o.Stage = []stage.Path{{Path: t.TempDir(), Kind: stage.KindDir}}
}

// TestHoldStagesWhenTheCopyComes: the holder says it awaits its staged
// copy, and is ready (taking commands) only once the copy, however late,
// is in place.
func TestHoldStagesWhenTheCopyComes(t *testing.T) {
	dir := t.TempDir()
	r, w := io.Pipe()
	var out lockedBuffer
	o := HoldOptions{Lifeline: r, Stage: []stage.Path{{Path: dir, Kind: stage.KindDir}}, Stdout: &out,
		Stderr: io.Discard, KillAll: func() {}}
	done := make(chan int, 1)
	go func() { done <- Hold(context.Background(), o) }()
	if !testenv.Eventually(5*time.Second, func() bool {
		_, ok := protocol.First(out.Bytes(), protocol.StateAwaitingStage)
		return ok
	}) {
		t.Fatalf("the holder did not say it awaits its copy: %q", out.Bytes())
	}
	time.Sleep(100 * time.Millisecond)
	if _, ok := protocol.First(out.Bytes(), protocol.StateReady); ok {
		t.Fatal("ready before its staged copy came")
	}
	tw := tar.NewWriter(w)
	body := "v2\n"
	if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(filepath.Join(dir, "r.txt"), "/"), Typeflag: tar.TypeReg,
		Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	if !testenv.Eventually(5*time.Second, func() bool {
		_, ok := protocol.First(out.Bytes(), protocol.StateReady)
		return ok
	}) {
		t.Fatalf("not ready once its copy came: %q", out.Bytes())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r.txt")); err != nil || string(b) != body {
		t.Errorf("the staged copy: %q %v", b, err)
	}
	_ = w.Close()
	if code := <-done; code != ExitLifelineCut {
		t.Errorf("exit %d, want %d", code, ExitLifelineCut)
	}
}

// lockedBuffer is a buffer written and read at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// TestExecMapsStartErrors: the helper's exit codes for what cannot start.
func TestExecMapsStartErrors(t *testing.T) {
	dir := t.TempDir()
	notExec := dir + "/not-exec"
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		argv []string
		want int
	}{
		{[]string{"sh", "-c", "exit 7"}, 7},
		{[]string{"no-such-command-anywhere"}, 127},
		{[]string{notExec}, 126},
		{nil, 125},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		code := Exec(context.Background(), ExecOptions{Argv: tt.argv, Stdout: io.Discard, Stderr: &stderr, Lifeline: false})
		if code != tt.want {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tt.argv, code, tt.want, stderr.String())
		}
	}
}
