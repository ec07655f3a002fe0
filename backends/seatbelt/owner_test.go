package seatbelt

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestSweep(t *testing.T) {
	state := t.TempDir()
	now := time.Now()
	self := owner{PID: os.Getpid(), Start: processStart(os.Getpid()), ExpiresAt: now.Add(time.Hour)}
	if self.Start == "" {
		t.Skip("no process start time on this OS")
	}
	dirs := map[string]*owner{
		"run-live":    &self,
		"run-expired": {PID: self.PID, Start: self.Start, ExpiresAt: now.Add(-time.Minute)},
		"run-dead":    {PID: self.PID, Start: "0.1", ExpiresAt: now.Add(time.Hour)}, // pid reused: another start time
		"run-nopid":   {ExpiresAt: now.Add(time.Hour)},
		"run-young":   nil, // no record yet: a start may still be writing it
		"run-old":     nil,
		"not-a-run":   nil,
	}
	for name, o := range dirs {
		d := filepath.Join(state, name)
		if err := os.MkdirAll(filepath.Join(d, "home"), 0o700); err != nil {
			t.Fatal(err)
		}
		if o != nil {
			if err := writeOwner(d, *o); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := now.Add(-2 * time.Minute)
	if err := os.Chtimes(filepath.Join(state, "run-old"), old, old); err != nil {
		t.Fatal(err)
	}
	removed, err := sweep(state, now)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{"run-dead", "run-expired", "run-nopid", "run-old"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, keep := range []string{"run-live", "run-young", "not-a-run"} {
		if _, err := os.Stat(filepath.Join(state, keep)); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	if got, err := sweep(filepath.Join(state, "missing"), now); err != nil || got != nil {
		t.Errorf("sweep of a missing directory = %v, %v", got, err)
	}
}
