// Command exechelper stands in for `triage-sandbox __exec` in the darwin
// tests: the same supervisor (sandboxinit.RunExec) behind the same spec,
// without the whole CLI, so the backend's tests do not depend on every
// other backend building on macOS.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/triage-sandbox/triage-sandbox/inside/sandboxinit"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != string(protocol.EntryExec) {
		fmt.Fprintf(os.Stderr, "usage: exechelper %s SPEC\n", protocol.EntryExec)
		os.Exit(125)
	}
	spec, err := protocol.DecodeExec(os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	os.Exit(sandboxinit.RunExec(context.Background(), spec,
		sandboxinit.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
