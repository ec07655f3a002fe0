// Package audit appends one JSON line per run to the audit log. Lines from
// concurrent runs never interleave: each is one write(2) under an exclusive
// flock on an O_APPEND file.
package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Record is one run. It never holds a secret value: argv is redacted by the
// caller and output is not recorded, only counted.
type Record struct {
	Time          time.Time `json:"time"`
	Role          string    `json:"role"`
	Backend       string    `json:"backend"`
	Argv          []string  `json:"argv"`
	PolicyHash    string    `json:"policy_hash"`
	Gate          string    `json:"gate"`
	ExitCode      int       `json:"exit_code"`
	DurationMS    float64   `json:"duration_ms"`
	TimedOut      bool      `json:"timed_out"`
	OOMKilled     bool      `json:"oom_killed"`
	Canceled      bool      `json:"canceled,omitempty"`
	OutputCeiling bool      `json:"output_ceiling,omitempty"`
	Truncated     bool      `json:"truncated"`
	StdoutBytes   int64     `json:"stdout_bytes"`
	StderrBytes   int64     `json:"stderr_bytes"`
	Sandbox       string    `json:"sandbox,omitempty"`
	Error         string    `json:"error,omitempty"`
}

// Append writes rec as one line to path, creating the file (0600) and its
// directory when missing.
func Append(path string, rec Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	line = append(line, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("audit log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking the audit log: %w", err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway
	if n, err := f.Write(line); err != nil || n != len(line) {
		return fmt.Errorf("writing the audit log %s: %v", path, err)
	}
	return nil
}
