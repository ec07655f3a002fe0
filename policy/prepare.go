package policy

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
)

// Prepare makes the policy's writable paths exist (a missing path is
// created, never skipped). When they are not staged copies and the sandbox
// identity cannot write an existing one (root ran us on a root-owned
// workspace), it gets a POSIX ACL entry, leaving ownership and mode alone.
func Prepare(p *Policy) error {
	if p.AllowAll {
		return nil
	}
	for _, m := range p.Mounts {
		if m.ReadOnly {
			continue
		}
		if err := prepareWritable(p, m); err != nil {
			return err
		}
	}
	return nil
}

// prepareWritable works through one descriptor: a sandbox that can write
// near the path (a concurrent run) cannot redirect the create or the ACL
// with a symlink, FIFO or directory planted there.
func prepareWritable(p *Policy, m Mount) error {
	// Build keeps writable paths inside the workspace root; a policy made
	// by other means (a test weakening one) is walked from / instead. Both
	// are canonical, so no symlink is expected on the way, and none is
	// followed.
	base := p.WorkspaceRoot
	rel, err := filepath.Rel(base, m.Path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		base, rel = "/", strings.TrimPrefix(m.Path, "/")
	}
	kind := hostfs.KindDir
	if m.Kind == "file" {
		kind = hostfs.KindFile
	}
	fd, err := hostfs.OpenWritable(base, rel, kind)
	if err != nil {
		return fmt.Errorf("preparing writable path: %w", err)
	}
	defer unix.Close(fd)
	if p.Staged() {
		// The sandbox writes a staged copy; triage-sandbox writes the host.
		return nil
	}
	if err := hostfs.EnsureWritableBy(fd, m.Path, p.User.UID, p.User.GID); err != nil {
		return fmt.Errorf("making writable path %s usable by uid %d: %w", m.Path, p.User.UID, err)
	}
	return nil
}
