//go:build !linux

package oomwatch

import "errors"

// ForPID: there are no cgroups to watch on this OS.
func ForPID(int) (Counter, error) {
	return nil, errors.New("oomwatch: cgroups are Linux-only")
}
