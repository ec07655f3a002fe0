package selftest

import (
	"fmt"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
)

// processesChecks leave a process behind after the run.
func processesChecks() []Check {
	return []Check{
		{ID: "PROC-02", Name: "leave a process running after the run", Category: "processes",
			Steps: func(e *Env) []probe.Step {
				return one(step("PROC-02", "spawn_detached", map[string]string{"token": survivorToken(e, false), "seconds": "60"}))
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				if len(ev.Survivors) > 0 {
					return true, fmt.Sprintf("still running after the run: pids %v (%s)", ev.Survivors, ev.SurvivorsSeen)
				}
				if len(ev.InsideSurvivors) > 0 {
					return true, fmt.Sprintf("still running in the sandbox after the run: pids %v there", ev.InsideSurvivors)
				}
				if ev.InsideScanErr != nil {
					// Fail closed: where the host cannot see the sandbox's
					// processes (gVisor), this scan is the only look.
					return true, "could not look for survivors inside the sandbox: " + ev.InsideScanErr.Error()
				}
				return false, "no survivor (" + errnoEvidence(ev.Obs["PROC-02"]) + ")"
			},
			Fix: "the whole sandbox must end with the command"},
		// Issue 35 item 7: a command ended its own sandbox with
		// kill(1, SIGTERM), reported as a stop from outside, its output
		// and copy back lost. In the processes phase's sandbox of its own:
		// an escape ends that run, not the main one's checks.
		// Only with a pid namespace, whose pid 1 is the holder: elsewhere
		// pid 1 is the host's init and the check could not fail.
		{ID: "PROC-04", Name: "signal the holder to end the sandbox", Category: "processes", Phase: PhaseProcesses,
			Requires: []policy.Capability{profiles.CapPidNamespace}, EndedRunEscapes: true,
			Steps: func(e *Env) []probe.Step {
				return one(step("PROC-04", "signal_holder", map[string]string{"pid": "1"}))
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				o, ok := ev.Obs["PROC-04"]
				switch {
				case !ok:
					// Fail closed: the observation went with the run.
					return true, "no observation: the run ended under the signals"
				case o.OK:
					return true, o.Detail
				case o.Errno != "":
					return true, "could not signal: " + o.Errno + " " + o.Detail
				}
				return false, o.Detail + "; the run ended as the command did"
			},
			Fix: "the holder must take and drop every catchable signal (sandboxinit.refuseSignals), and the seccomp filter refuse sigqueue and F_SETSIG"},
	}
}

// timeoutChecks outlive the time limit (a run of its own).
func timeoutChecks() []Check {
	return []Check{
		{ID: "PROC-03", Name: "outlive the time limit", Category: "processes", Phase: PhaseTimeout,
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				if ev.Host {
					// The control: the spinning probe survived SIGTERM.
					return len(ev.Survivors) > 0, fmt.Sprintf("ignored SIGTERM on the host: %v", len(ev.Survivors) > 0)
				}
				if !ev.Result.TimedOut {
					return true, fmt.Sprintf("not reported as a timeout (exit %d)", ev.Result.ExitCode)
				}
				if len(ev.Survivors) > 0 {
					return true, fmt.Sprintf("still running after the timeout: %v", ev.Survivors)
				}
				return false, fmt.Sprintf("killed at the timeout, reported as timeout (%s)", ev.Result.Duration.Round(1e6))
			},
			Fix: "the backend must kill the whole sandbox at the timeout"},
	}
}
