package docker

import (
	"testing"
	"time"
)

// TestSweepLetsStartsGoFirst: a sweep waits for the starts in flight (all
// of them) to be past their container's start, at most its bound, and not
// at all when none is.
func TestSweepLetsStartsGoFirst(t *testing.T) {
	var s startsInFlight
	begun := time.Now()
	s.settled(time.Minute)
	if d := time.Since(begun); d > time.Second {
		t.Fatalf("waited %v with no start in flight", d)
	}
	endA, endB := s.begin(), s.begin()
	settled := make(chan time.Time, 1)
	go func() { s.settled(time.Minute); settled <- time.Now() }()
	time.Sleep(50 * time.Millisecond)
	endA()
	time.Sleep(50 * time.Millisecond)
	ended := time.Now()
	endB()
	if at := <-settled; at.Before(ended) {
		t.Fatalf("the sweep went %v before the last start in flight ended", ended.Sub(at))
	}
	defer s.begin()()
	begun = time.Now()
	s.settled(100 * time.Millisecond)
	if d := time.Since(begun); d < 100*time.Millisecond || d > 10*time.Second {
		t.Fatalf("waited %v for a start that never ends, want its bound (100ms)", d)
	}
}
