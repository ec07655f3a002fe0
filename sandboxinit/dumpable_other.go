//go:build !linux

package sandboxinit

import "errors"

func undumpable() error {
	return errors.New("no way to make the holder undumpable on this system")
}
