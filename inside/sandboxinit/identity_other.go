//go:build !linux

package sandboxinit

import (
	"errors"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// takeIdentity: only a Linux container runtime starts a helper as root to
// take the sandbox identity; elsewhere a spec that asks for it is refused.
func takeIdentity(id *protocol.Identity) error {
	if id == nil {
		return nil
	}
	return errors.New("taking a sandbox identity is for Linux helpers only")
}
