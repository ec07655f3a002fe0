//go:build !linux

package sandboxinit

import "errors"

func undumpable() error {
	return errors.New("no way to make the holder undumpable on this system")
}

// guardFromCommand: elsewhere the helper runs outside the sandbox (the
// seatbelt backend's supervisor), where the profile keeps the command from
// other processes.
func guardFromCommand() error { return nil }
