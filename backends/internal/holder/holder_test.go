package holder

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestCloseOnce: release runs once; every call returns its error, which
// says `gc` finishes the work and is one warning.
func TestCloseOnce(t *testing.T) {
	b := New(&policy.Policy{}, Config{})
	calls := 0
	release := func() error { calls++; return errors.New("removing container x: busy") }
	first, second := b.CloseOnce(release), b.CloseOnce(release)
	if calls != 1 || first == nil || first != second || !strings.Contains(first.Error(), "(run `triage-sandbox gc`)") {
		t.Fatalf("%d releases, errors %v and %v", calls, first, second)
	}
	if w := b.Warnings(); len(w) != 1 || w[0] != first.Error() {
		t.Errorf("warnings %q", w)
	}
	clean := New(&policy.Policy{}, Config{})
	if err := clean.CloseOnce(func() error { return nil }); err != nil || len(clean.Warnings()) != 0 {
		t.Errorf("a clean close: %v, warnings %q", err, clean.Warnings())
	}
}

// TestAwait: a holder that ended before its word is explained by the
// backend (or by the base with what it said); one that did not answer in
// time names the bound; its own failure passes as it is.
func TestAwait(t *testing.T) {
	ended := New(&policy.Policy{}, Config{Noun: "the local sandbox"})
	_, _ = ended.Out.Write([]byte("cannot mount /x\n"))
	close(ended.Gone)
	if err := ended.Await(context.Background(), holderexec.AwaitHolder); err == nil ||
		!strings.HasPrefix(err.Error(), "the local sandbox ended while starting") {
		t.Errorf("ended: %v", err)
	}
	custom := New(&policy.Policy{}, Config{Ended: func() error { return errors.New("exit 3") }})
	close(custom.Gone)
	if err := custom.Await(context.Background(), holderexec.AwaitHolder); err == nil || err.Error() != "exit 3" {
		t.Errorf("the backend's explanation: %v", err)
	}
	slow := New(&policy.Policy{}, Config{Setup: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := slow.Await(ctx, holderexec.AwaitHolder); err == nil || !strings.Contains(err.Error(), "did not start within 50ms") {
		t.Errorf("slow: %v", err)
	}
}

// TestAdmit: no command before the staged copy is in place, none without
// a program, none once the holder ended.
func TestAdmit(t *testing.T) {
	staged := &policy.Policy{Staging: policy.Staging{Size: 1 << 20}, Mounts: []policy.Mount{{Path: t.TempDir(), Kind: "dir"}}}
	b := New(staged, Config{})
	if !b.staging.Defer(staged, backends.StartOptions{DeferStaging: true}) {
		t.Fatal("a staged policy's start was not deferred")
	}
	ok := backends.Command{Argv: []string{"true"}}
	if err := b.Admit(ok, nil); err == nil || !strings.Contains(err.Error(), "not copied in yet") {
		t.Errorf("before the copy: %v", err)
	}
	plain := New(&policy.Policy{}, Config{})
	if err := plain.Admit(ok, nil); err != nil {
		t.Errorf("a ready sandbox: %v", err)
	}
	if err := plain.Admit(backends.Command{}, nil); err == nil {
		t.Error("a command with no program was admitted")
	}
	close(plain.Gone)
	if err := plain.Admit(ok, func() error { return errors.New("gone") }); err == nil || err.Error() != "gone" {
		t.Errorf("after the end: %v", err)
	}
}

// TestReadyWaits: a start waits for the holder's word after its staged
// copy; without a copy, NoReadyWaitUnstaged returns at once.
func TestReadyWaits(t *testing.T) {
	staged := &policy.Policy{Staging: policy.Staging{Size: 1 << 20}, Mounts: []policy.Mount{{Path: t.TempDir(), Kind: "dir"}}}
	for _, tc := range []struct {
		name  string
		p     *policy.Policy
		cfg   Config
		waits bool
	}{
		{"staged", staged, Config{}, true},
		{"staged, unstaged ones do not wait", staged, Config{NoReadyWaitUnstaged: true}, true},
		{"unstaged", &policy.Policy{}, Config{}, true},
		{"unstaged, unstaged ones do not wait", &policy.Policy{}, Config{NoReadyWaitUnstaged: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.p, tc.cfg)
			b.SetLifeline(&strings.Builder{})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := b.Ready(ctx, backends.StartOptions{})
			if waited := err != nil; waited != tc.waits {
				t.Fatalf("waited for the holder's word: %v (%v), want %v", waited, err, tc.waits)
			}
		})
	}
}

// brokenPipe is a lifeline whose reader is gone.
type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestRefusedCopyToldByTheHolder: a staged copy whose write broke off
// because the holder refused it (its writable space full) is told by the
// holder's own word, with what to do, not by the broken pipe; a holder
// that said nothing leaves the pipe's error.
func TestRefusedCopyToldByTheHolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	staged := &policy.Policy{Staging: policy.Staging{Size: 1 << 20}, Mounts: []policy.Mount{{Path: dir, Kind: "dir"}}}
	for _, tc := range []struct {
		name, said, want string
	}{
		{"said why", "staging failed: write big: no space left on device", "raise [sandbox] writable_size"},
		{"said nothing", "", "broken pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(staged, Config{})
			b.SetLifeline(brokenPipe{})
			if tc.said != "" {
				_ = protocol.WriteStatus(&b.Out, protocol.Status{State: protocol.StateStagingFailed, Detail: tc.said})
			}
			close(b.Gone)
			err := b.Ready(context.Background(), backends.StartOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.said != "" && strings.Contains(err.Error(), "broken pipe")) {
				t.Errorf("Ready: %v; want it to say %q", err, tc.want)
			}
		})
	}
}

// TestCopyBreaksOffAtTheHoldersEnd: a staged copy's write that blocks
// (a stream nothing reads: docker's attach of a container that is gone)
// is broken off once the holder ends, and told by the holder's word.
func TestCopyBreaksOffAtTheHoldersEnd(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	staged := &policy.Policy{Staging: policy.Staging{Size: 1 << 20}, Mounts: []policy.Mount{{Path: dir, Kind: "dir"}}}
	b := New(staged, Config{})
	host, holder := net.Pipe()
	defer holder.Close()
	b.SetLifeline(host)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = protocol.WriteStatus(&b.Out, protocol.Status{State: protocol.StateStagingFailed, Detail: "no space left on device"})
		close(b.Gone)
	}()
	done := make(chan error, 1)
	go func() { done <- b.Ready(context.Background(), backends.StartOptions{}) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "raise [sandbox] writable_size") {
			t.Errorf("Ready: %v; want the holder's word", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the copy's write still blocks 10 s after the holder ended")
	}
}
