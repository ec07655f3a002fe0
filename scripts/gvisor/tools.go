//go:build tools

// Package gvisor pins the runsc scripts/gvisor.sh builds; it is never
// compiled, only read by the go command to resolve its dependencies.
package gvisor

import _ "gvisor.dev/gvisor/runsc"
