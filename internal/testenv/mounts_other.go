//go:build !linux

package testenv

// unmountUnder: the private daemon runs on Linux only.
func unmountUnder(string) error { return nil }
