package oci

import (
	"context"
	"testing"
	"time"
)

// TestSweepWaitsForTheSpawn: a sweep begun beside a start waits until the
// start reaches its runtime's spawn, and no longer than its bound when
// the start never does; with no start in flight it does not wait.
func TestSweepWaitsForTheSpawn(t *testing.T) {
	b := &Backend{stateDir: t.TempDir()}
	swept := func() <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := b.Sweep(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		return done
	}
	select {
	case <-swept():
	case <-time.After(time.Second):
		t.Fatal("a sweep with no start in flight waited")
	}

	spawned := b.preparing.begin()
	done := swept()
	select {
	case <-done:
		t.Fatal("the sweep did not wait for the start's spawn")
	case <-time.After(100 * time.Millisecond):
	}
	spawned()
	spawned() // counted out once
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("the sweep still waits after the spawn")
	}

	// A start that never spawns holds a sweep for the bound only.
	defer b.preparing.begin()()
	w := &b.preparing
	start := time.Now()
	w.await(context.Background(), 50*time.Millisecond)
	if d := time.Since(start); d < 50*time.Millisecond || d > time.Second {
		t.Errorf("waited %v for a start that never spawns, want the bound (50ms)", d)
	}
}
