// Package audit appends one JSON line per run to the audit log. Lines from
// concurrent runs never interleave: each is one write(2) under an exclusive
// flock on an O_APPEND file.
package audit

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Record is one run. It never holds a secret value: argv is redacted by the
// caller and output is not recorded, only counted.
type Record struct {
	Time          time.Time     `json:"time"`
	Role          profiles.Role `json:"role"`
	Backend       string        `json:"backend"`
	Config        string        `json:"config,omitempty"`
	Argv          []string      `json:"argv"`
	PolicyHash    string        `json:"policy_hash"`
	Gate          string        `json:"gate"`
	ExitCode      int           `json:"exit_code"`
	DurationMS    float64       `json:"duration_ms"`
	TimedOut      bool          `json:"timed_out"`
	OOMKilled     bool          `json:"oom_killed"`
	Canceled      bool          `json:"canceled,omitempty"`
	OutputCeiling bool          `json:"output_ceiling,omitempty"`
	Truncated     bool          `json:"truncated"`
	StdoutBytes   int64         `json:"stdout_bytes"`
	StderrBytes   int64         `json:"stderr_bytes"`
	Sandbox       string        `json:"sandbox,omitempty"`
	Error         string        `json:"error,omitempty"`
	// Network are the network proxy's decisions (a network allow-list).
	Network []egress.Decision `json:"network,omitempty"`
}

// Append writes rec as one line to path, creating the file (0600) and its
// directory (0700) when missing. The file is opened without following a
// symlink and without blocking: a symlink, FIFO, device or directory there
// is refused with one line, never written through or waited on.
func Append(path string, rec Record) error {
	line, err := encode(rec)
	if err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	line = append(line, '\n')
	fd, err := hostfs.OpenAppend(path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
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
