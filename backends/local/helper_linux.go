package local

import (
	"context"
	"fmt"
	"os"

	"github.com/triage-sandbox/triage-sandbox/backends/local/confine"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/sandboxinit"
)

// RunHelper is the helper: it reads its plan, builds the sandbox's root,
// restricts itself for good and then holds the sandbox, starting the
// host's commands as they come. It returns the exit code.
func RunHelper(ctx context.Context, spec protocol.Local, io sandboxinit.Stdio) int {
	fail := func(err error) int {
		// The host shows it as the reason the start failed.
		_ = protocol.WriteStatus(io.Out, protocol.Status{State: protocol.StateHolderFailed, Detail: err.Error()})
		return exitcode.Refused
	}
	// The bounding set goes beside the build (see confine.DropBounding).
	bounding := confine.DropBounding()
	planFile := os.NewFile(uintptr(spec.PlanFD), "plan")
	plan, err := confine.ReadPlan(planFile)
	_ = planFile.Close()
	if err != nil {
		return fail(err)
	}
	if err := confine.Enter(plan); err != nil {
		return fail(err)
	}
	if err := bounding(); err != nil {
		return fail(err)
	}
	if err := confine.Restrict(plan); err != nil {
		return fail(err)
	}
	ho := sandboxinit.HoldOptions{TTL: spec.Hold.TTL.D(), Stage: spec.Hold.Stage, Stdout: io.Out, Stderr: io.Err,
		Control: os.NewFile(uintptr(spec.Hold.ControlFD), "control"), Helper: protocol.InitPath,
		HelperEntries: []protocol.Entry{protocol.EntryExec, protocol.EntryExport}, SweepLeftovers: true}
	if spec.Hold.Lifeline {
		ho.Lifeline = io.In
	}
	if ho.Control == nil {
		return fail(fmt.Errorf("control descriptor %d is not open", spec.Hold.ControlFD))
	}
	return sandboxinit.Hold(ctx, ho)
}
