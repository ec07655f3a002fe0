package oci

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/holder"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// The OOM watch's wait for the runtime's pid file: read at once when it is
// there (the holder is ready by then), polled for when it comes later, and
// given up (0: no OOM watch, the run goes on) when it is bad, when the
// sandbox ended first, or when ctx did.
func TestAwaitPidFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before is the pid file's content before the wait ("": none);
		// write runs beside the wait (nil: nothing).
		before string
		write  func(t *testing.T, dir string)
		gone   bool
		want   int
	}{
		{name: "there at once", before: "4242", want: 4242},
		{name: "renamed in later", want: 4343, write: func(t *testing.T, dir string) {
			time.Sleep(30 * time.Millisecond)
			renameIn(t, dir, "4343\n")
		}},
		{name: "empty, then written in place", want: 4444, write: func(t *testing.T, dir string) {
			path := filepath.Join(dir, "pid")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Error(err)
			}
			time.Sleep(20 * time.Millisecond)
			if err := os.WriteFile(path, []byte("4444"), 0o600); err != nil {
				t.Error(err)
			}
		}},
		{name: "not a pid", want: 0, write: func(t *testing.T, dir string) { renameIn(t, dir, "12ab") }},
		{name: "not positive", want: 0, write: func(t *testing.T, dir string) { renameIn(t, dir, "-1") }},
		{name: "the sandbox ended first", gone: true, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := &sandbox{Base: holder.New(&policy.Policy{}, holder.Config{}), dir: dir}
			if tc.before != "" {
				renameIn(t, dir, tc.before)
			}
			if tc.gone {
				close(s.Gone)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if tc.write != nil {
					tc.write(t, dir)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if got := s.awaitPidFile(ctx); got != tc.want {
				t.Errorf("awaitPidFile = %d, want %d", got, tc.want)
			}
			<-done
		})
	}
}

// An ended ctx ends the wait for a pid file that never comes.
func TestAwaitPidFileEndsWithCtx(t *testing.T) {
	s := &sandbox{Base: holder.New(&policy.Policy{}, holder.Config{}), dir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if got := s.awaitPidFile(ctx); got != 0 {
		t.Errorf("awaitPidFile = %d after ctx ended, want 0", got)
	}
}

// renameIn writes the pid file as runc does: a temporary file renamed in.
func renameIn(t *testing.T, dir, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".pid.tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, filepath.Join(dir, "pid")); err != nil {
		t.Error(err)
	}
}
