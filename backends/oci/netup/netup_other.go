//go:build !linux

// Package netup makes network namespaces whose loopback interface is up;
// network namespaces are Linux's.
package netup

import "errors"

var errNotLinux = errors.New("netup: network namespaces need Linux")

// Create needs Linux.
func Create(path string) error { return errNotLinux }

// Remove needs Linux.
func Remove(path string) error { return errNotLinux }

// Up needs Linux.
func Up(pid int) error { return errNotLinux }
