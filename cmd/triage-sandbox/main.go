// Command triage-sandbox runs commands proposed by AI triage agents inside a
// sandbox compiled from triage.toml. This package only parses flags and calls
// the library packages; see the README for the contracts.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/inside"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/output"
)

// exitError carries a specific exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

// refuse is triage-sandbox's own failure before the command ran: exit 125.
func refuse(err error) error { return &exitError{code: exitcode.Refused, err: err} }

func main() {
	// Nothing of the caller's crosses by inheritance: no process started
	// from here (helper, holder, supervisor, command) gets a descriptor
	// that was not passed to it on purpose.
	if err := inside.Prepare(); err != nil {
		os.Exit(report(refuse(err)))
	}
	if code, ok := inside.Run(sandboxEntries(), os.Args[1:]); ok {
		os.Exit(code)
	}
	tr, err := phase.FromEnv("cli")
	if err != nil {
		os.Exit(report(refuse(err)))
	}
	ctx, stop := signal.NotifyContext(phase.With(context.Background(), tr), os.Interrupt, syscall.SIGTERM)
	phase.Mark(ctx, "main")
	endCLI := phase.Begin(ctx, "cli")
	root := newRootCmdFor(os.Args[1:])
	err = root.ExecuteContext(ctx)
	stop()
	code := report(err)
	endCLI()
	_ = tr.Close()
	os.Exit(code)
}

// report prints err (one line per problem) and returns the exit code.
func report(err error) int { return reportTo(os.Stderr, err) }

// reportTo is report on w.
func reportTo(w io.Writer, err error) int {
	if err == nil {
		return 0
	}
	code := exitcode.Refused
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		// Neutralised: an error may quote a name the sandbox chose.
		for _, line := range strings.Split(strings.TrimSpace(err.Error()), "\n") {
			fmt.Fprintln(w, "triage-sandbox: "+output.Line(line))
		}
	}
	return code
}

// subcommands makes each subcommand, by name.
var subcommands = []struct {
	name string
	make func() *cobra.Command
}{
	{"run", newRunCmd}, {"check", newCheckCmd}, {"render", newRenderCmd}, {"policy", newPolicyCmd},
	{"doctor", newDoctorCmd}, {"image", newImageCmd}, {"version", newVersionCmd}, {"selftest", newSelftestCmd},
	{"gc", newGCCmd}, {"session", newSessionCmd}, {"mcp", newMCPCmd}, {"prepare", newPrepareCmd},
}

// newRootCmdFor is the root with only the subcommand args name when it
// names one: every start builds its own command's flags and help, not all
// of them. Anything else (no subcommand, help, completion, a flag first, a
// name it does not know) gets every subcommand, so help, completion and
// cobra's suggestions are whole.
func newRootCmdFor(args []string) *cobra.Command {
	if len(args) > 0 {
		for _, sc := range subcommands {
			if sc.name == args[0] {
				root := newBareRootCmd()
				root.AddCommand(sc.make())
				return root
			}
		}
	}
	return newRootCmd()
}

// newRootCmd is the root with every subcommand.
func newRootCmd() *cobra.Command {
	root := newBareRootCmd()
	for _, sc := range subcommands {
		root.AddCommand(sc.make())
	}
	return root
}

func newBareRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "triage-sandbox",
		Short:         "Run AI-triage commands and issue reproducers in a sandbox compiled from triage.toml",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return refuse(fmt.Errorf("%v (see --help)", err))
	})
	return root
}
