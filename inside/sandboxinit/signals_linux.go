package sandboxinit

import (
	"os"
	"syscall"
)

// linuxOnlySignals are the refusedSignals only Linux has.
var linuxOnlySignals = []os.Signal{syscall.SIGSTKFLT, syscall.SIGPWR}
