// Package godeps is a Go module with a third-party dependency: its tests
// build only when the dependency is readable in the sandbox.
package godeps

import "example.com/greet"

// Welcome greets each name.
func Welcome(names ...string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, greet.Hello(n))
	}
	return out
}
