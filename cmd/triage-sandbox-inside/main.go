// Command triage-sandbox-inside is the small static binary that runs
// inside a sandbox: the holder, the supervisor, export and unpack, the
// local backend's helper and the selftest's probes (package inside). It
// links none of the CLI (no Docker client, MCP SDK or cobra), so a start
// costs a fraction of one of cmd/triage-sandbox's. The CLI uses it only
// when it is provably built from the same source as itself, and runs its
// own binary otherwise (package insidebin); it is never run by hand.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/inside"
)

func main() {
	if err := inside.Prepare(); err != nil {
		os.Exit(inside.Refused(err))
	}
	if code, ok := inside.Run(inside.Entries(context.Background(), inside.Stdio()), os.Args[1:]); ok {
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "triage-sandbox-inside: this binary runs only inside a sandbox, started by triage-sandbox; run triage-sandbox instead")
	os.Exit(exitcode.Refused)
}
