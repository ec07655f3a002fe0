package local

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/local/confine"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/sandboxinit"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// RunHelper is the helper: it reads its plan, builds the sandbox's root,
// restricts itself for good and then holds the sandbox, starting the
// host's commands as they come. It returns the exit code.
func RunHelper(ctx context.Context, o HelperOptions) int {
	fail := func(err error) int {
		// One line: the host shows it as the reason the start failed.
		fmt.Fprintln(o.Stdout, stage.FailedLine+strings.ReplaceAll(err.Error(), "\n", " "))
		return exitcode.Refused
	}
	if o.PlanFD < 3 || o.ControlFD < 3 {
		return fail(fmt.Errorf("--plan-fd %d and --control-fd %d must be inherited descriptors above stderr", o.PlanFD, o.ControlFD))
	}
	planFile := os.NewFile(uintptr(o.PlanFD), "plan")
	plan, err := confine.ReadPlan(planFile)
	_ = planFile.Close()
	if err != nil {
		return fail(err)
	}
	if err := confine.Enter(plan); err != nil {
		return fail(err)
	}
	if err := confine.Restrict(plan); err != nil {
		return fail(err)
	}
	ho := sandboxinit.HoldOptions{TTL: o.TTL, Stage: o.Stage, Stdout: o.Stdout, Stderr: o.Stderr,
		Control: os.NewFile(uintptr(o.ControlFD), "control"), Helper: backends.InitPath,
		HelperSubcommands: []string{backends.ExecSubcommand, backends.ExportSubcommand}, SweepLeftovers: true}
	if o.Lifeline {
		ho.Lifeline = o.Stdin
	}
	return sandboxinit.Hold(ctx, ho)
}
