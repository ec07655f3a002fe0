package local

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
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
	entries, err := os.ReadDir(b.stateDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(b.stateDir, e.Name())
		var rec owner
		raw, err := os.ReadFile(filepath.Join(dir, "owner.json"))
		if err == nil {
			err = json.Unmarshal(raw, &rec)
		}
		if err == nil && alive(rec.PID, rec.Start) && time.Now().Before(rec.ExpiresAt) {
			continue
		}
		if err != nil {
			// Half-written: only once no start can still be writing it.
			if fi, serr := os.Stat(dir); serr != nil || time.Since(fi.ModTime()) < time.Minute {
				continue
			}
		}
		if rec.Helper > 0 && alive(rec.Helper, rec.HelperAt) {
			_ = killPID(rec.Helper) // the pid namespace's init: everything in it goes
		}
		if err := removeCgroups(rec.Cgroups); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// alive: pid is still the process that started at start.
func alive(pid int, start string) bool {
	if pid <= 0 || start == "" {
		return false
	}
	return backends.ProcessStart(pid) == start
}
