//go:build tools

// Package gvisor pins the gVisor binaries scripts/gvisor.sh builds (runsc
// and its containerd shim); it is never compiled, only read by the go
// command to resolve their dependencies.
package gvisor

import (
	_ "gvisor.dev/gvisor/runsc"
	_ "gvisor.dev/gvisor/shim"
)
