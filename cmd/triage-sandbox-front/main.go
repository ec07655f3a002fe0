// Command triage-sandbox-front is what users run as triage-sandbox (built
// as bin/triage-sandbox): a small static binary that answers `version`
// itself and hands every other command, unchanged, to the full CLI
// (cmd/triage-sandbox, built as triage-sandbox-cli beside it) by exec:
// the same argv, environment and descriptors. It links none of the CLI
// (no Docker client, policy compiler, cobra, MCP SDK), so a start costs
// about what an empty Go program's does; deps_test.go keeps it so.
package main

import (
	"os"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/internal/buildversion"
)

func main() {
	args := os.Args[1:]
	// Exactly `version`: anything more (--help, a stray argument, a trace
	// asked for) is the CLI's to answer as it always has.
	if len(args) == 1 && args[0] == "version" && os.Getenv("TRIAGE_SANDBOX_TRACE") == "" {
		if _, err := os.Stdout.WriteString(buildversion.Line()); err != nil {
			os.Exit(exitcode.Refused)
		}
		return
	}
	// `run --session NAME` runs in the session's keeper when it can, a
	// `run` of a pool in the pool's keeper.
	tryFast(args)
	err := handOver(args)
	// Reached only when the CLI could not be started.
	_, _ = os.Stderr.WriteString("triage-sandbox: " + err.Error() + "\n")
	os.Exit(exitcode.Refused)
}
