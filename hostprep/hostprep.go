// Package hostprep prepares the host for a run: it makes the policy's
// writable paths exist and usable by the sandbox identity, as the policy
// decided (policy.Policy.HostPreparation). It sits with the layers that
// start a run (sandbox, warm, selftest import it), not in policy, so the
// policy only decides and never touches the host.
package hostprep

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Writable makes each of p's writable paths exist (a missing path is
// created, never skipped) and, where the sandbox writes the host's path
// itself, writable by its identity.
func Writable(p *policy.Policy) error {
	for _, w := range p.HostPreparation() {
		if err := prepare(w); err != nil {
			return err
		}
	}
	return nil
}

// prepare works through one descriptor: a sandbox that can write near the
// path (a concurrent run) cannot redirect the create or the ACL with a
// symlink, FIFO or directory planted there.
func prepare(w policy.HostPath) error {
	kind := hostfs.KindDir
	if w.File {
		kind = hostfs.KindFile
	}
	fd, err := hostfs.OpenWritable(w.Base, w.Rel, kind)
	if err != nil {
		return fmt.Errorf("preparing writable path: %w", err)
	}
	defer unix.Close(fd)
	if !w.Grant {
		// A staged copy: the sandbox writes the copy; triage-sandbox the host.
		return nil
	}
	if err := hostfs.EnsureWritableBy(fd, w.Path, w.UID, w.GID); err != nil {
		return fmt.Errorf("making writable path %s usable by uid %d: %w", w.Path, w.UID, err)
	}
	return nil
}
