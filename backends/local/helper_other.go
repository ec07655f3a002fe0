//go:build !linux

package local

import (
	"context"
	"fmt"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// RunHelper refuses: the confinement is Linux's.
func RunHelper(ctx context.Context, o HelperOptions) int {
	fmt.Fprintln(o.Stdout, stage.FailedLine+"the local backend's helper runs on Linux only")
	return exitcode.Refused
}
