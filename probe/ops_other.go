//go:build !linux

package probe

// Probes are Linux-only for now (the docker backend); the seatbelt backend
// will bring its own set.
var ops = map[string]opFunc{}
