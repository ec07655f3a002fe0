//go:build !linux

package attachgrace

import "errors"

// Pass: no cgroups here, so no grace period to pass.
func Pass() error { return errors.New("attachgrace: no cgroups on this system") }
