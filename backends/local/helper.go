package local

import (
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
