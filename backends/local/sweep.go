package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/ownership"
)

// owner is the ownership record of one sandbox: a sweep judges by it alone.
type owner struct {
	PID       int       `json:"pid"`
	Start     string    `json:"start"`
	Helper    int       `json:"helper_pid"`
	HelperAt  string    `json:"helper_start"`
	ExpiresAt time.Time `json:"expires_at"`
	Cgroups   []string  `json:"cgroups,omitempty"`
	Role      string    `json:"role"`
	Policy    string    `json:"policy_hash"`
}

// Sweep implements backends.Backend: sandboxes whose owner is gone or
// whose lifetime passed are killed (their helper, if it is still the
// process recorded) and their cgroups and records removed.
func (b *Backend) Sweep(ctx context.Context) ([]string, error) {
	stale, err := ownership.StaleDirs(b.stateDir, "owner.json", nil, func(rec owner) bool {
		return ownership.OwnerAlive(rec.PID, rec.Start) && time.Now().Before(rec.ExpiresAt)
	})
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, s := range stale {
		if ownership.OwnerAlive(s.Record.Helper, s.Record.HelperAt) {
			_ = killPID(s.Record.Helper) // the pid namespace's init: everything in it goes
		}
		if err := removeCgroups(s.Record.Cgroups); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := removeStateDir(s.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, s.Name)
	}
	return removed, errors.Join(errs...)
}

// mappedPrefix names the id-mapped views (mapOwners) in a sandbox's state
// directory.
const mappedPrefix = "mapped-"

// removeStateDir unmounts a sandbox's id-mapped views, then removes its
// state directory; with a view still mounted nothing is removed.
func removeStateDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), mappedPrefix) {
			if err := overlay.Unmount(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("the sandbox's state %s: %w", dir, err)
			}
		}
	}
	return os.RemoveAll(dir)
}
