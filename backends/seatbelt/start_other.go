//go:build !darwin

package seatbelt

import (
	"context"
	"errors"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

var errNeedsMacOS = errors.New("the seatbelt backend needs macOS (sandbox-exec); use docker, oci or local here")

// Available implements backends.Backend.
func (b *Backend) Available(ctx context.Context) error { return errNeedsMacOS }

// Start implements backends.Backend.
func (b *Backend) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	return nil, errNeedsMacOS
}

// Describe implements backends.Backend.
func (b *Backend) Describe(ctx context.Context, p *policy.Policy) map[string]string {
	return map[string]string{"sandbox_exec": SandboxExec, "available": "no (needs macOS)"}
}

// listeningPorts: only macOS's listeners matter to a macOS profile.
func listeningPorts(ctx context.Context) ([]int, error) { return nil, nil }
