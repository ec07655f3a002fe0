package sandboxinit

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
		{name: "signal from outside", setup: func(o *HoldOptions) func() {
			return func() { _ = syscall.Kill(os.Getpid(), syscall.SIGTERM) }
		}, wantCode: ExitStoppedOutside, wantLine: `triage-sandbox-status {"state":"stopped_outside","detail":"terminated"}`},
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
