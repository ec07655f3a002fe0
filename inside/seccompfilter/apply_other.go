//go:build !linux

package seccompfilter

import "errors"

// Apply needs Linux.
func Apply(set string) error {
	return errors.New("seccompfilter: a seccomp filter exists only on Linux")
}
