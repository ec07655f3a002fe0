package selftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/probe"
)

type controlResult struct {
	saw     bool
	summary string
	// notHere: the host has nothing to reach; the check is not applicable.
	notHere string
}

// runControls runs every hostile check outside the sandbox against the same
// canaries. A check whose control does not succeed is inconclusive.
func runControls(ctx context.Context, o Options, e *Env, checks []Check) (map[string]*controlResult, *Evidence) {
	out := map[string]*controlResult{}
	var steps []probe.Step
	for _, ch := range checks {
		if ch.HasControl() && sideOrMain(ch.Phase) && ch.Steps != nil {
			steps = append(steps, ch.Steps(e)...)
		}
	}
	before, err := e.C.Snapshot(e.Writable)
	e.C.ResetHits()
	ev := &Evidence{Host: true}
	if err == nil {
		ev.Obs, err = runHostPlan(ctx, o.SelfHost, e, probe.Plan{Steps: steps})
	}
	if err == nil {
		ev.Survivors = Survivors("survivor-" + e.C.Token)
		ev.LoopbackHits, ev.RemoteHits = e.C.Loopback.Hits(), e.C.RemoteHits()
		ev.SocketHits = e.C.DeepSocketHits()
		var after map[string]string
		if after, err = e.C.Snapshot(e.Writable); err == nil {
			ev.Changed = Changed(before, after)
		}
	}
	KillByToken("survivor-" + e.C.Token)
	var outEv *Evidence
	for _, ch := range checks {
		if !ch.HasControl() {
			continue
		}
		if err != nil {
			out[ch.ID] = &controlResult{summary: "control did not run: " + err.Error()}
			continue
		}
		cev := ev
		switch ch.Phase {
		case PhaseMain, PhaseMemory, PhaseProcesses, PhaseFill: // in ev
		case PhaseOutput:
			if outEv == nil {
				outEv = outputControl(ctx, o, e)
			}
			cev = outEv
		default:
			cev = secondPhaseControl(ctx, o, e, ch)
		}
		if ch.HostLacks != nil {
			if lacks, why := ch.HostLacks(cev); lacks {
				out[ch.ID] = &controlResult{notHere: why}
				continue
			}
		}
		saw, detail := ch.Judge(e, cev)
		out[ch.ID] = &controlResult{saw: saw, summary: detail}
	}
	return out, ev
}

// sideOrMain: the phase's hostile steps run in the host control as they
// are (the second, timeout, browser and output phases have controls of
// their own).
func sideOrMain(p Phase) bool {
	return p == PhaseMain || p == PhaseMemory || p == PhaseProcesses || p == PhaseFill
}

// secondPhaseControl performs the host side of the second-run checks.
func secondPhaseControl(ctx context.Context, o Options, e *Env, ch Check) *Evidence {
	ev := &Evidence{Host: true}
	switch ch.ID {
	case "WR-11":
		// On the host, a file written by one run is there for the next.
		dir := e.C.Dir + "/host-scratch"
		_ = os.MkdirAll(dir, 0o700)
		p := dir + "/.selftest-persist"
		_ = os.WriteFile(p, []byte("x"), 0o600)
		obs, err := runHostPlan(ctx, o.SelfHost, e, probe.Plan{Steps: one(step("WR-11", "exists", map[string]string{"path": p}))})
		if err == nil {
			ev.Obs = obs
		}
	case "PROC-03":
		// The spinning probe survives SIGTERM on the host.
		tag := "control-spin-" + e.C.Token
		enc, _ := probe.Plan{Steps: one(step("spin", "spin_ignore_term", nil))}.Encode()
		argv := probe.Argv(o.SelfHost, tag, enc)
		cmd := exec.Command(argv[0], argv[1:]...)
		if cmd.Start() == nil {
			// Signalled once it ignores the signal, not after a guess.
			awaitIgnoring(cmd.Process.Pid, syscall.SIGTERM, 10*time.Second)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			time.Sleep(300 * time.Millisecond)
			ev.Survivors = Survivors(tag)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	return ev
}

// outputControl runs the flood on the host with nothing in between: the
// raw output has every escape, command and secret the checks look for.
func outputControl(ctx context.Context, o Options, e *Env) *Evidence {
	cmd := exec.CommandContext(ctx, o.SelfHost, probe.ChildSubcommand, "flood", strconv.Itoa(floodBytes), floodSecret(e.C))
	raw, err := cmd.Output()
	if err != nil {
		return &Evidence{Host: true}
	}
	return &Evidence{Host: true, Shown: string(raw), OutStats: output.Stats{BytesIn: int64(len(raw))}}
}

// runHostPlan runs the probe unsandboxed with the canary environment.
func runHostPlan(ctx context.Context, self string, e *Env, plan probe.Plan) (map[string]probe.Observation, error) {
	enc, err := plan.Encode()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	argv := probe.Argv(self, "control-"+e.C.Token, enc)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = e.C.Root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.C.Home}
	for k, v := range e.C.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A terminal of its own (never ours) as controlling tty, so the TIOCSTI
	// control has a terminal to inject into. Without one, a session of its
	// own and no terminal at all: the control must never type into ours.
	if tty, err := newControllingTTY(cmd); err == nil {
		defer tty.Close()
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	runErr := cmd.Run()
	obs, err := probe.ParseObservations(&stdout)
	if err != nil {
		return nil, err
	}
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		return nil, fmt.Errorf("control probe: %w: %s", runErr, stderr.String())
	}
	return obs, nil
}
