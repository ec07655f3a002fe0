package localhelper

import (
	"context"
	"fmt"
	"os"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/inside/confine"
	"github.com/triage-sandbox/triage-sandbox/inside/sandboxinit"
	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/protocol"
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
	var tr *phase.Tracer
	if spec.TraceFD != 0 {
		// Closed before the helper holds: nothing in the sandbox writes to
		// it (and every descriptor is close-on-exec here anyway).
		tr = phase.ToWriter("helper", os.NewFile(uintptr(spec.TraceFD), "trace"))
		ctx = phase.With(ctx, tr)
	}
	thread, score, err := confineSelf(ctx, spec)
	_ = tr.Close()
	if err != nil {
		return fail(err)
	}
	ho := sandboxinit.HoldOptions{TTL: spec.Hold.TTL.D(), Stage: spec.Hold.Stage, Stdout: io.Out, Stderr: io.Err,
		Control: os.NewFile(uintptr(spec.Hold.ControlFD), "control"), Helper: protocol.InitPath,
		HelperEntries: []protocol.Entry{protocol.EntryExec, protocol.EntryExport}, SweepLeftovers: true,
		Thread: thread, Score: score, RaiseSupervisors: true, Forward: spec.Hold.Forward}
	if spec.Hold.Lifeline {
		ho.Lifeline = io.In
	}
	if ho.Control == nil {
		return fail(fmt.Errorf("control descriptor %d is not open", spec.Hold.ControlFD))
	}
	return sandboxinit.Hold(ctx, ho)
}

// confineSelf reads the plan, builds the sandbox and restricts the helper.
// It returns the thread the holder starts every child from: the one whose
// bounding set is empty (see confine.DropForkerBounding), and the helper's
// own OOM score, opened before Landlock makes /proc read-only to it (nil
// where it cannot be: then commands keep the holder's score, as before).
func confineSelf(ctx context.Context, spec protocol.Local) (*sandboxinit.Thread, *supervise.OwnScore, error) {
	defer phase.Begin(ctx, "confine")()
	end := phase.Begin(ctx, "forker")
	var forker int
	thread, err := sandboxinit.NewThread(func() (err error) {
		forker, err = confine.DropForkerBounding()
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	end()
	end = phase.Begin(ctx, "plan")
	planFile := os.NewFile(uintptr(spec.PlanFD), "plan")
	plan, err := confine.ReadPlan(planFile)
	_ = planFile.Close()
	if err != nil {
		return nil, nil, err
	}
	end()
	end = phase.Begin(ctx, "enter")
	if err := confine.Enter(ctx, plan); err != nil {
		return nil, nil, err
	}
	end()
	score, _ := supervise.OpenOwnScore()
	end = phase.Begin(ctx, "restrict")
	defer end()
	if err := confine.Restrict(ctx, plan, forker); err != nil {
		return nil, nil, err
	}
	return thread, score, nil
}
