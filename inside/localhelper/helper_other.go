//go:build !linux

package localhelper

import (
	"context"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/inside/sandboxinit"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// RunHelper refuses: the confinement is Linux's.
func RunHelper(ctx context.Context, spec protocol.Local, io sandboxinit.Stdio) int {
	_ = protocol.WriteStatus(io.Out, protocol.Status{State: protocol.StateHolderFailed,
		Detail: "the local backend's helper runs on Linux only"})
	return exitcode.Refused
}
