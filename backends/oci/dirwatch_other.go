//go:build !linux

package oci

// dirChanges: no inotify here; the caller polls.
func dirChanges(string) (changed <-chan struct{}, stop func()) { return nil, func() {} }
