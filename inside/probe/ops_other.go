//go:build !linux && !darwin

package probe

// Probes run on Linux and macOS only: elsewhere every step reports an
// unknown op and the selftest judges it inconclusive.
var ops = map[string]opFunc{}
