package policy

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
)

// Prepare makes the policy's writable paths exist and usable by the sandbox
// identity: a missing path is created (never skipped), and when the identity
// cannot write an existing one (root ran us on a root-owned workspace) it
// gets a POSIX ACL entry, leaving ownership and mode alone.
func Prepare(p *Policy) error {
	if p.AllowAll {
		return nil
	}
	for _, m := range p.Mounts {
		if m.ReadOnly {
			continue
		}
		if err := createMissing(m); err != nil {
			return err
		}
		if err := hostfs.EnsureWritableBy(m.Path, p.User.UID, p.User.GID); err != nil {
			return fmt.Errorf("making writable path %s usable by uid %d: %w", m.Path, p.User.UID, err)
		}
	}
	return nil
}

func createMissing(m Mount) error {
	if _, err := os.Lstat(m.Path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(m.Path), 0o755); err != nil {
		return fmt.Errorf("creating the parent of writable path %s: %w", m.Path, err)
	}
	if m.Kind == "file" {
		f, err := os.OpenFile(m.Path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("creating writable file %s: %w", m.Path, err)
		}
		return f.Close()
	}
	if err := os.MkdirAll(m.Path, 0o755); err != nil {
		return fmt.Errorf("creating writable directory %s: %w", m.Path, err)
	}
	return nil
}
