package main

import (
	"context"
	"fmt"
	"os"

	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/sandboxinit"
)

// sandboxEntries are the entry points the binary runs inside (or beside) a
// sandbox. They are dispatched before any CLI is built: each takes one
// typed spec (package protocol) and nothing else.
func sandboxEntries() map[protocol.Entry]func(args []string) int {
	stdio := sandboxinit.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	ctx := context.Background()
	return map[protocol.Entry]func(args []string) int{
		protocol.EntryHold: func(args []string) int {
			spec, err := protocol.DecodeHold(args)
			if err != nil {
				return entryRefused(err)
			}
			return sandboxinit.RunHold(ctx, spec, stdio)
		},
		protocol.EntryExec: func(args []string) int {
			spec, err := protocol.DecodeExec(args)
			if err != nil {
				return entryRefused(err)
			}
			return sandboxinit.RunExec(ctx, spec, stdio)
		},
		protocol.EntryExport: func(args []string) int {
			spec, err := protocol.DecodeExport(args)
			if err != nil {
				return entryRefused(err)
			}
			return sandboxinit.RunExport(spec, os.Stdout, os.Stderr)
		},
		protocol.EntryLocal: func(args []string) int {
			spec, err := protocol.DecodeLocal(args)
			if err != nil {
				return entryRefused(err)
			}
			return local.RunHelper(ctx, spec, stdio)
		},
	}
}

// runSandboxEntry runs entry e when it is one of sandboxEntries.
func runSandboxEntry(e string, args []string) (int, bool) {
	run, ok := sandboxEntries()[protocol.Entry(e)]
	if !ok {
		return 0, false
	}
	return run(args), true
}

func entryRefused(err error) int {
	fmt.Fprintf(os.Stderr, "triage-sandbox: %v\n", err)
	return 125
}
