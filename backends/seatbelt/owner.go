package seatbelt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ownerFile is the ownership record in each per-run directory: a sweep
// judges a directory by it alone.
const ownerFile = "owner.json"

// runPrefix starts every per-run directory's name.
const runPrefix = "run-"

type owner struct {
	PID       int       `json:"pid"`
	Start     string    `json:"start"`
	ExpiresAt time.Time `json:"expires_at"`
	Role      string    `json:"role"`
	Policy    string    `json:"policy_hash"`
}

func (o owner) alive() bool {
	if o.PID <= 0 || o.Start == "" {
		return false
	}
	return processStart(o.PID) == o.Start
}

func writeOwner(dir string, o owner) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ownerFile), b, 0o600)
}

// Sweep implements backends.Backend: per-run directories whose owner is
// gone or whose lifetime passed are removed. Their commands died with
// their owner's supervisor (its lifeline), so only files are left.
func (b *Backend) Sweep(_ context.Context) ([]string, error) {
	return sweep(b.opts.StateDir, time.Now())
}

// sweep removes the stale run directories under state.
func sweep(state string, now time.Time) ([]string, error) {
	entries, err := os.ReadDir(state)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", state, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runPrefix) {
			continue
		}
		dir := filepath.Join(state, e.Name())
		var o owner
		raw, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err == nil {
			err = json.Unmarshal(raw, &o)
		}
		switch {
		case err == nil && o.alive() && now.Before(o.ExpiresAt):
			continue
		case err != nil:
			// Half made: only once no start can still be writing it.
			if fi, serr := os.Stat(dir); serr != nil || now.Sub(fi.ModTime()) < time.Minute {
				continue
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}
