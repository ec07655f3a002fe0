package selftest

import "github.com/triage-sandbox/triage-sandbox/internal/procargs"

// procArgv reads the argv out of a kern.procargs2 buffer (macOS).
func procArgv(b []byte) []string {
	argv, _ := procargs.Parse(b)
	return argv
}
