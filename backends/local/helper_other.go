//go:build !linux

package local

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/triage-sandbox/triage-sandbox/stage"
)

// HelperOptions are the helper's flags.
type HelperOptions struct {
	PlanFD, ControlFD int
	Lifeline          bool
	TTL               time.Duration
	Stage             []stage.Path
	Stdin             io.Reader
	Stdout, Stderr    io.Writer
}

// RunHelper refuses: the confinement is Linux's.
func RunHelper(ctx context.Context, o HelperOptions) int {
	fmt.Fprintln(o.Stdout, stage.FailedLine+"the local backend's helper runs on Linux only")
	return 125
}
