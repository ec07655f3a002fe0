//go:build !linux

package selftest

// plantDeviceNode plants nothing: only Linux's PRIV-05 opens one.
func plantDeviceNode(string) string { return "" }
