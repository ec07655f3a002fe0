//go:build !linux

package sandboxinit

import "os"

// linuxOnlySignals: none elsewhere.
var linuxOnlySignals []os.Signal
