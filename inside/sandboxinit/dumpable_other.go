//go:build !linux

package sandboxinit

import (
	"errors"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

func undumpable() error {
	return errors.New("no way to make the holder undumpable on this system")
}

// guardFromCommand: elsewhere the helper runs outside the sandbox (the
// seatbelt backend's supervisor), where the profile keeps the command from
// other processes.
func guardFromCommand(id *protocol.Identity) error { return takeIdentity(id) }
