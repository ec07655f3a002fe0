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

	"github.com/triage-sandbox/triage-sandbox/ownership"
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
	stale, err := ownership.StaleDirs(state, ownerFile, func(name string) bool { return strings.HasPrefix(name, runPrefix) },
		func(o owner) bool { return o.alive() && now.Before(o.ExpiresAt) })
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", state, err)
	}
	var removed []string
	var errs []error
	for _, s := range stale {
		if err := os.RemoveAll(s.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, s.Name)
	}
	return removed, errors.Join(errs...)
}
