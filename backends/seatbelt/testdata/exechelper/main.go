// Command exechelper stands in for `triage-sandbox __exec` in the darwin
// tests: the same supervisor (sandboxinit.Exec) behind the same flags,
// without the whole CLI, so the backend's tests do not depend on every
// other backend building on macOS.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/sandboxinit"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != backends.ExecSubcommand {
		fmt.Fprintf(os.Stderr, "usage: exechelper %s [--grace D] [--timeout D] [--lifeline] -- CMD...\n", backends.ExecSubcommand)
		os.Exit(125)
	}
	fs := flag.NewFlagSet(backends.ExecSubcommand, flag.ContinueOnError)
	grace := fs.Duration("grace", time.Second, "")
	timeout := fs.Duration("timeout", 0, "")
	lifeline := fs.Bool("lifeline", false, "")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(125)
	}
	os.Exit(sandboxinit.Exec(context.Background(), sandboxinit.ExecOptions{
		Argv: fs.Args(), Timeout: *timeout, Grace: *grace, Lifeline: *lifeline,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	}))
}
