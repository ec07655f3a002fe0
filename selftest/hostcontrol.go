package selftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/output"
)

type controlResult struct {
	saw     bool
	summary string
	// notHere: the host has nothing to reach; the check is not applicable.
	notHere string
}

// hostControls is the control runs of one role: those the sandbox runs
// wait for (the main steps, which own the host-side evidence, and the
// fills, which write the writable paths staging copies in), and those
// that touch neither (memory, processes, and the phases with controls of
// their own), which go on beside the sandbox runs.
type hostControls struct {
	mu      sync.Mutex
	results map[string]*controlResult
	evs     []*Evidence
	// background are the controls the sandbox runs do not wait for.
	background sync.WaitGroup
}

// sideControlPhases run as processes of their own, each beside the others:
// together in one they were the selftest's longest serial stretch.
var sideControlPhases = []Phase{PhaseMemory, PhaseProcesses, PhaseFill}

// startControls runs the hostile checks' steps outside the sandbox against
// the same canaries; it returns once the sandbox runs may start (the main
// and fill controls are done and judged: their judges read the host as
// the control left it). wait gives every control's verdict.
// The others start only then: beside the main control, on 2 cores, they
// took CPU from the control every sandbox start waits for (the memory
// control's allocation past the limit most), and beside the sandbox runs
// they have time to spare.
func startControls(ctx context.Context, o Options, e *Env, checks []Check, clock *phaseClock) *hostControls {
	hc := &hostControls{results: map[string]*controlResult{}}
	var now sync.WaitGroup
	side := func(wg *sync.WaitGroup, ph Phase) {
		steps := controlSteps(e, checks, ph)
		if len(steps) == 0 {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer clock.record("control-"+phaseName(ph), time.Now())
			obs, err := runHostPlan(ctx, o.SelfHost, e, probe.Plan{Steps: steps})
			hc.judge(e, checks, ph, &Evidence{Host: true, Obs: obs}, err)
		}()
	}
	side(&now, PhaseFill)
	t0 := time.Now()
	ev, err := mainControl(ctx, o, e, controlSteps(e, checks, PhaseMain))
	clock.record("control-main", t0)
	hc.judge(e, checks, PhaseMain, ev, err)
	now.Wait()
	hc.background.Add(1)
	go func() {
		defer hc.background.Done()
		defer clock.record("control-own", time.Now())
		hc.ownControls(ctx, o, e, checks)
	}()
	for _, ph := range sideControlPhases {
		if ph != PhaseFill {
			side(&hc.background, ph)
		}
	}
	return hc
}

// judge judges the control of every hostile check of phase on ev.
func (hc *hostControls) judge(e *Env, checks []Check, ph Phase, ev *Evidence, err error) {
	out := map[string]*controlResult{}
	for _, ch := range checks {
		if ch.HasControl() && ch.Phase == ph {
			out[ch.ID] = judgeControl(e, ch, ev, err)
		}
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	maps.Copy(hc.results, out)
	if err == nil {
		hc.evs = append(hc.evs, ev)
	}
}

// judgeControl is a check's control verdict on its evidence.
func judgeControl(e *Env, ch Check, ev *Evidence, err error) *controlResult {
	if err != nil {
		return &controlResult{summary: "control did not run: " + err.Error()}
	}
	if ch.HostLacks != nil {
		if lacks, why := ch.HostLacks(ev); lacks {
			return &controlResult{notHere: why}
		}
	}
	saw, detail := ch.Judge(e, ev)
	return &controlResult{saw: saw, summary: detail}
}

// wait waits for the background controls and returns every check's
// control verdict and the control runs' evidence (for the slowest steps).
func (hc *hostControls) wait() (map[string]*controlResult, []*Evidence) {
	hc.background.Wait()
	return hc.results, hc.evs
}

// The argv tokens of PROC-02's detached child start with these: the
// sandbox's, and the host control's (neither holds the other, since a
// scan matches a token anywhere in a process's argv).
const (
	sandboxSurvivor = "survivor-"
	controlSurvivor = "ctlsurv-"
)

// survivorToken is the argv token of PROC-02's detached child: the
// sandbox's, or (host) the control's.
func survivorToken(e *Env, host bool) string {
	if host {
		return controlSurvivor + e.C.Token
	}
	return sandboxSurvivor + e.C.Token
}

// controlSteps are the steps of the phase's hostile checks, as the control
// runs them.
func controlSteps(e *Env, checks []Check, ph Phase) []probe.Step {
	var steps []probe.Step
	for _, ch := range checks {
		if ch.HasControl() && ch.Phase == ph && ch.Steps != nil {
			for _, s := range ch.Steps(e) {
				steps = append(steps, hostStep(s))
			}
		}
	}
	return steps
}

// hostStep is a step as the control runs it. A fill that keeps what fits
// does so for the sandbox's copy back to face; the host has none, so its
// control stops at the proof (the filesystem's own count of free inodes
// for the rest), as the probe does on a bounded filesystem: the answer
// (the host has room) is the same, without tens of thousands of files.
// PROC-04's signals go to a child of the control's own.
func hostStep(s probe.Step) probe.Step {
	if s.Op == "spawn_detached" {
		// The control's survivor carries a token of its own: one its
		// scan missed (a spawn still on its way under load) must never
		// be taken for the sandbox's, which the main run looks for by
		// the sandbox's token while the control's may still live.
		args := maps.Clone(s.Args)
		args["token"] = strings.Replace(args["token"], sandboxSurvivor, controlSurvivor, 1)
		s.Args = args
		return s
	}
	if s.Args[clusterStepArg] != "" {
		// A cluster target: its control is a pod's (clusterNet), never
		// a connect from the host, which may route it off this machine.
		return step(s.ID, "uname", nil)
	}
	if s.Op == "signal_holder" {
		// The host's pid 1 is its init: the control signals a naive
		// holder of its own instead.
		s.Args = map[string]string{"pid": "child"}
		return s
	}
	if s.Op != "fill" || s.Args["keep_unbounded"] == "" {
		return s
	}
	args := maps.Clone(s.Args)
	delete(args, "keep_unbounded")
	s.Args = args
	return s
}

// mainControl runs the main phase's steps on the host and observes the
// host-side evidence around them, as the main sandbox run does.
func mainControl(ctx context.Context, o Options, e *Env, steps []probe.Step) (*Evidence, error) {
	before, err := e.C.Snapshot(e.Writable)
	e.C.ResetHits()
	ev := &Evidence{Host: true}
	defer KillByToken(survivorToken(e, true))
	if err != nil {
		return ev, err
	}
	if ev.Obs, err = runHostPlan(ctx, o.SelfHost, e, probe.Plan{Steps: steps}); err != nil {
		return ev, err
	}
	return ev, observeAfter(e, before, ev)
}

// observeAfter adds to ev what the host saw once a phase's steps ran: the
// processes left with the survivor token (then killed, before they can
// change what is observed next), the canaries' hits and what changed in
// the writable paths since before.
func observeAfter(e *Env, before map[string]string, ev *Evidence) error {
	token := survivorToken(e, ev.Host)
	ev.Survivors = append(ev.Survivors, Survivors(token)...)
	ev.SurvivorsSeen = describeSurvivors(ev.Survivors)
	KillByToken(token)
	ev.LoopbackHits, ev.RemoteHits = e.C.Loopback.Hits(), e.C.RemoteHits()
	ev.SocketHits = e.C.DeepSocketHits()
	after, err := e.C.Snapshot(e.Writable)
	if err != nil {
		return err
	}
	ev.Changed = Changed(before, after)
	return nil
}

// ownControls runs and judges the controls of the checks whose phases
// have controls of their own (second, timeout, output, network): none touches the
// canaries or the writable paths, so they go on beside the sandbox runs.
func (hc *hostControls) ownControls(ctx context.Context, o Options, e *Env, checks []Check) {
	var outEv, netEv *Evidence
	for _, ch := range checks {
		if !ch.HasControl() || sideOrMain(ch.Phase) {
			continue
		}
		var cev *Evidence
		switch ch.Phase {
		case PhaseOutput:
			if outEv == nil {
				outEv = outputControl(ctx, o, e)
			}
			cev = outEv
		case PhaseNetwork:
			if netEv == nil {
				netEv = networkControl(ctx, o, e, checks)
			}
			cev = netEv
		default:
			cev = secondPhaseControl(ctx, o, e, ch)
		}
		r := judgeControl(e, ch, cev, nil)
		hc.mu.Lock()
		hc.results[ch.ID] = r
		hc.mu.Unlock()
	}
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
		argv, err := probe.Argv(o.SelfHost, tag, probe.Plan{Steps: one(step("spin", "spin_ignore_term", nil))})
		if err != nil {
			return ev
		}
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
	argv, err := probe.Argv(self, "control-"+e.C.Token, plan)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
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
