package probe

import (
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"runtime"
	"slices"
)

// linuxOnlyOps need Linux itself (/proc, namespaces, prctl). Elsewhere they
// observe Unsupported, never a success or a denial: the checks using them
// require a capability only Linux backends claim.
var linuxOnlyOps = []string{"proc_scan", "proc_mem", "proc_status", "unshare", "ptrace_helpers"}

// unsupportedKey marks an observation of an op this OS cannot perform.
const unsupportedKey = protocol.ProbeUnsupportedKey

// RunsOn reports whether op performs its action on goos; false means it
// observes Unsupported there (or is unknown).
func RunsOn(op, goos string) bool {
	switch goos {
	case "linux":
		return true
	case "darwin":
		return !slices.Contains(linuxOnlyOps, op)
	}
	return false
}

// unsupported is what an op that needs another kernel observes here.
func unsupported(op string) Observation {
	return Observation{Errno: "ENOTSUP", Detail: op + " needs Linux; not supported on " + runtime.GOOS,
		Values: map[string]string{unsupportedKey: runtime.GOOS}}
}
