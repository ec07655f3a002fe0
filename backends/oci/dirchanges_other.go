//go:build !linux

package oci

import "errors"

// dirChanges is Linux's inotify only: elsewhere the wait polls.
func dirChanges(string) (<-chan struct{}, func(), error) {
	return nil, nil, errors.New("no inotify")
}
