package docker

import (
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/holder"
)

// The daemon's oom event trails the kill: a count asked with a settle
// waits for news past the count given before, up to oomEventLag, and one
// asked without waits for nothing.
func TestOOMKillsWaitsForTrailingNews(t *testing.T) {
	s := &sandbox{Base: holder.New(nil, holder.Config{})}
	s.oomEvents.Store(2)
	kills := s.oomKills()
	start := time.Now()
	if got := kills(0); got != 2 || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("before: %d after %v, want 2 at once", got, time.Since(start))
	}

	start = time.Now()
	if got := kills(0); got != 2 || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("no settle: %d after %v, want 2 at once", got, time.Since(start))
	}

	time.AfterFunc(150*time.Millisecond, func() { s.oomEvents.Add(1) })
	start = time.Now()
	if got := kills(2 * time.Second); got != 3 {
		t.Fatalf("trailing news: %d, want 3", got)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > oomEventLag {
		t.Fatalf("trailing news came after %v, want about 150ms", d)
	}

	start = time.Now()
	if got := kills(2 * time.Second); got != 3 {
		t.Fatalf("no news: %d, want 3", got)
	}
	if d := time.Since(start); d < oomEventLag-100*time.Millisecond || d > oomEventLag+500*time.Millisecond {
		t.Fatalf("no news: waited %v, want about %v", d, oomEventLag)
	}
}

// An exec's stream that outlives its container (gVisor's, killed whole at
// its memory limit) is cut execDrain after the container's end, and the
// exec counts as killed; one that ends by itself is read to its end.
func TestStreamOutlivedContainer(t *testing.T) {
	for _, tt := range []struct {
		name          string
		exited, ended bool // the container ended; the stream ends by itself
		want          bool
	}{
		{"stream ends, container runs", false, true, false},
		{"stream ends, container gone", true, true, false},
		{"stream outlives its container", true, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &sandbox{Base: holder.New(nil, holder.Config{})}
			if tt.exited {
				close(s.Gone)
			}
			copied := make(chan struct{})
			if tt.ended {
				close(copied)
			}
			cut := false
			start := time.Now()
			got := s.streamOutlived(copied, func() { cut = true; close(copied) })
			if got != tt.want || cut != tt.want {
				t.Fatalf("outlived %v cut %v, want %v", got, cut, tt.want)
			}
			if d := time.Since(start); tt.want && (d < execDrain || d > execDrain+time.Second) {
				t.Fatalf("cut after %v, want about %v", d, execDrain)
			}
		})
	}
}

// A container that ended by itself (gVisor's, killed whole at its memory
// limit) waits longer for its oom news: exit and OOM reach the daemon
// apart.
func TestOOMKillsWaitsLongerForAnEndedContainer(t *testing.T) {
	s := &sandbox{Base: holder.New(nil, holder.Config{})}
	kills := s.oomKills()
	kills(0)
	close(s.Gone)
	time.AfterFunc(oomEventLag+300*time.Millisecond, func() { s.oomEvents.Add(1) })
	if got := kills(2 * time.Second); got != 1 {
		t.Fatalf("ended container: %d, want the news that came after %v", got, oomEventLag)
	}
}
