//go:build !linux

package local

import (
	"context"
	"errors"
	"runtime"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

var errNotLinux = errors.New("the local backend confines processes with Linux namespaces, Landlock and seccomp; on " + runtime.GOOS + " use seatbelt (macOS) or docker")

// Start needs Linux.
func (b *Backend) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	return nil, errNotLinux
}

func cgroupsUsable() error         { return errNotLinux }
func killPID(int) error            { return errNotLinux }
func removeCgroups([]string) error { return nil }
