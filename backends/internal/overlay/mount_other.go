//go:build !linux

package overlay

import "errors"

// The flag values only need to be distinct here: nothing is mounted off Linux.
const (
	msNoSUID   = 1 << iota
	msNoDev    = 1 << iota
	msReadOnly = 1 << iota
	msNoExec   = 1 << iota
)

var (
	errNotMounted = errors.New("not a mount point")
	errNeedsLinux = errors.New("an overlay needs Linux")
)

func platformSupported() error { return errNeedsLinux }

func mount(_, _, _ string, _ uintptr, _ string) error { return errNeedsLinux }

// detach: nothing can have been mounted by this package off Linux.
func detach(string) error { return errNotMounted }

func idmapLower(_, _ string, _, _ [2]int) error { return errNeedsLinux }

// CoverView needs Linux.
func (s *Set) CoverView(_, _, _ string, _ []string) (string, error) { return "", errNeedsLinux }
