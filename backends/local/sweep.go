package local

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/ownership"
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
		if err := os.RemoveAll(s.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, s.Name)
	}
	return removed, errors.Join(errs...)
}
