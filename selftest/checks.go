package selftest

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// hostOS is the OS the catalogue and the canaries are made for; a test
// sets it to see another OS's catalogue.
var hostOS = runtime.GOOS

// Expectation is what a check needs to see for the gate to pass.
type Expectation string

// The two expectations.
const (
	Blocked Expectation = "blocked"
	Allowed Expectation = "allowed"
)

// Phase says which sandbox run carries a check's steps.
type Phase int

const (
	// PhaseMain is the batch run of every ordinary probe.
	PhaseMain Phase = iota
	// PhaseSecond is a second, fresh run after the main one (persistence).
	PhaseSecond
	// PhaseTimeout is a run that must hit its timeout; it runs beside the
	// main run.
	PhaseTimeout
	// PhaseBrowser runs headless Chromium beside the main run.
	PhaseBrowser
	// PhaseOutput floods hostile output through the user-facing output
	// pipeline, beside the main run.
	PhaseOutput
	// PhaseMemory goes past the memory limit in a sandbox of its own,
	// beside the main run: where the limit ends the whole sandbox (gVisor,
	// whose kernel is charged for the memory), no other check goes with it.
	PhaseMemory
	// PhaseProcesses forks past the process limit beside the main run.
	PhaseProcesses
	// PhaseFill fills the writable paths past their bounds beside the main
	// run. Each exhaustion has a sandbox of its own: under gVisor every
	// task and file costs the sandbox's own memory, so together they would
	// end in its OOM kill.
	PhaseFill
	// PhaseNetwork runs the allow-list checks (NET-20 …) beside the main
	// run, in a sandbox whose network is the selftest's own allow-list.
	PhaseNetwork
)

// Env is what checks build their steps from.
type Env struct {
	C *Canaries
	P *policy.Policy
	// Writable are the configured writable paths: the only host paths a
	// sandboxed command may change.
	Writable []string
	// Scratch is where the phase's sandbox put HOME and TMPDIR.
	Scratch policy.ScratchPaths
	// Net is where the network phase's steps go (nil: the sandbox's
	// forwarder, with no host canaries).
	Net *netEnv
	// Cluster is the targets on the backend's shared network and their
	// control (nil: the backend shares none; checks_cluster.go).
	Cluster *clusterNet
}

// Evidence is everything observed after one phase, inside and on the host.
type Evidence struct {
	Obs          map[string]probe.Observation
	Changed      []string // host paths changed outside the writable paths
	LoopbackHits int64
	RemoteHits   int64
	// SocketHits are the deep unix listeners' connections, by path.
	SocketHits map[string]int64
	Survivors  []int
	// SurvivorsSeen describes the survivors as they were found.
	SurvivorsSeen string
	// InsideSurvivors are the main run's survivors as its sandbox sees
	// them (pids there); InsideScanErr says why that scan did not run
	// through (nil with no scan: a pooled sandbox, a macOS host).
	InsideSurvivors []int
	InsideScanErr   error
	Result          backends.Result
	Stderr          string
	// Shown is what the output pipeline let through (PhaseOutput), and
	// OutStats its counts; for the control, the raw output.
	Shown    string
	OutStats output.Stats
	// Outputs is what the run's output inspection found and did.
	Outputs hostfs.Inspection
	// Net is the network phase's record: the proxy's decisions, its dials
	// and the canaries' arrivals.
	Net *netRecord
	// Host is true for the control run (outside the sandbox).
	Host bool
}

// Check is one catalogue entry. For a hostile check Judge says whether the
// action succeeded (escaped); for a control, whether it worked. The same
// Judge reads the control's evidence, which is how a check proves it can fail.
type Check struct {
	ID       string
	Name     string
	Category string
	Expect   Expectation
	Roles    []profiles.Role // nil: both
	// Requires are what a backend must enforce for the check to mean
	// anything; where one is missing the check is reported not applicable.
	Requires []policy.Capability
	Phase    Phase
	Steps    func(e *Env) []probe.Step
	Judge    func(e *Env, ev *Evidence) (bool, string)
	// Fix is what to change when the check fails.
	Fix string
	// Inconclusive, when set, says the check could not be decided here (a
	// tool it exercises is missing): the gate fails, but as inconclusive.
	Inconclusive func(e *Env, ev *Evidence) (bool, string)
	// HostLacks, when set, reads the control's evidence: the host itself
	// has nothing to reach (no AF_VSOCK here), so the check is not
	// applicable, with the reason; never ok.
	HostLacks func(control *Evidence) (bool, string)
	// SandboxOOMBlocks: the whole sandbox killed at its memory limit is a
	// verdict (the Judge's), not a missing observation.
	SandboxOOMBlocks bool
	// EndedRunEscapes: a phase run that broke off under its command (the
	// sandbox had started) is this check's failure, not an inconclusive
	// one: the check's act is ending the run.
	EndedRunEscapes bool
	// ControlOnHost: an allowed check of the main phase whose steps also
	// run outside the sandbox, for what the host itself may lack (the
	// name localhost): where the host cannot do it either, a failure
	// inside is inconclusive, not the sandbox's.
	ControlOnHost bool
	// ClusterKind: a cluster network check (checks_cluster.go) of the
	// backend's targets of this kind; it runs only where the backend has
	// a shared network (backends.NetProber), its control in a pod.
	ClusterKind string
}

// HasControl reports whether the check runs once outside the sandbox too:
// every hostile one does, and a control that asks for it.
func (c *Check) HasControl() bool { return c.Expect == Blocked || c.ControlOnHost }

func step(id, op string, args map[string]string, list ...string) probe.Step {
	return probe.Step{ID: id, Op: op, Args: args, List: list}
}

func one(s probe.Step) []probe.Step { return []probe.Step{s} }

// beside puts steps in a lane of their own (probe.Step.Lane), which runs
// once the phase's other steps have, beside the other lanes: for controls
// that run programs for seconds and look at nothing the others touch. In
// one lane the main run took the sum of them (2.5 to 4.5 s of a docker
// selftest's longest pole on 2 cores), beside one another the longest.
// Nothing runs beside the hostile steps, and the headroom control (C-08,
// hundreds of forks: under gVisor each a trap) stays in their lane: beside
// the others it starved steps with a time bound (C-05's and C-11's fetch
// timed out under gVisor).
func beside(lane string, steps ...probe.Step) []probe.Step {
	for i := range steps {
		steps[i].Lane = lane
	}
	return steps
}

func (e *Env) home(rel ...string) []string {
	var out []string
	for _, r := range rel {
		out = append(out, filepath.Join(e.C.Home, r))
	}
	return out
}

func (e *Env) checkout(rel string) string { return filepath.Join(e.C.Checkout, rel) }

func (e *Env) repros(name string) string {
	for _, w := range e.Writable {
		if fi, err := os.Stat(w); err == nil && fi.IsDir() {
			return filepath.Join(w, name)
		}
	}
	return filepath.Join(e.C.Root, "repros", name)
}

// errnoEvidence formats an observation for the report.
func errnoEvidence(o probe.Observation) string {
	if o.Errno != "" {
		return o.Errno
	}
	return o.Detail
}

// readJudge: escaped when the canary token was read.
func readJudge(id string) func(*Env, *Evidence) (bool, string) {
	return func(_ *Env, ev *Evidence) (bool, string) {
		o := ev.Obs[id]
		if o.Values["found"] == "true" {
			return true, "canary read: " + o.Detail
		}
		return false, errnoEvidence(o)
	}
}

// writeJudge: escaped when any host path under targets changed. The probe's
// own success is not trusted: a write may land in sandbox-private scratch.
func writeJudge(id string, targets func(e *Env) []string) func(*Env, *Evidence) (bool, string) {
	return func(e *Env, ev *Evidence) (bool, string) {
		for _, ch := range ev.Changed {
			for _, t := range targets(e) {
				if ch == t || strings.HasPrefix(ch, t+"/") {
					return true, "host file changed: " + ch
				}
			}
		}
		return false, errnoEvidence(ev.Obs[id])
	}
}

// okJudge: the action itself succeeded.
func okJudge(id string) func(*Env, *Evidence) (bool, string) {
	return func(_ *Env, ev *Evidence) (bool, string) {
		o := ev.Obs[id]
		if !o.OK && o.Errno != "" && o.Detail != "" {
			// What failed, not only how: a control that fails says why.
			return false, o.Errno + ": " + o.Detail
		}
		return o.OK, errnoEvidence(o)
	}
}

// Catalogue returns every check, in report order: the hostile ones by
// category, those of the later runs (second, timeout, output) after the
// main run's, then the controls.
func Catalogue() []Check {
	hostile := slices.Concat(
		secretsChecks(),
		environmentChecks(),
		ipcSessionChecks(),
		writesChecks(),
		networkChecks(),
		clusterChecks(),
		allowListChecks(),
		ipcHostChecks(),
		privilegeChecks(),
		processesChecks(),
		resourcesChecks(),
		persistenceChecks(),
		timeoutChecks(),
		outputChecks(),
		outputsChecks(),
	)
	for i := range hostile {
		hostile[i].Expect = Blocked
	}
	return slices.Concat(hostile, []Check{allowedNameCheck()}, controlChecks())
}
