package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/probe"
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
)

// Env is what checks build their steps from.
type Env struct {
	C *Canaries
	P *policy.Policy
	// Outputs are the configured writable paths: the only host paths a
	// sandboxed command may change.
	Outputs []string
	// Scratch is where the phase's sandbox put HOME and TMPDIR.
	Scratch policy.ScratchPaths
}

// Evidence is everything observed after one phase, inside and on the host.
type Evidence struct {
	Obs          map[string]probe.Observation
	Changed      []string // host paths changed outside the writable paths
	LoopbackHits int64
	RemoteHits   int64
	Survivors    []int
	Result       backends.Result
	Stderr       string
	// Shown is what the output pipeline let through (PhaseOutput), and
	// OutStats its counts; for the control, the raw output.
	Shown    string
	OutStats output.Stats
	// Outputs is what the run's output inspection found and did.
	Outputs hostfs.Inspection
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
}

// HasControl reports whether the check runs once outside the sandbox too:
// every hostile one does.
func (c *Check) HasControl() bool { return c.Expect == Blocked }

func step(id, op string, args map[string]string, list ...string) probe.Step {
	return probe.Step{ID: id, Op: op, Args: args, List: list}
}

func one(s probe.Step) []probe.Step { return []probe.Step{s} }

func (e *Env) home(rel ...string) []string {
	var out []string
	for _, r := range rel {
		out = append(out, filepath.Join(e.C.Home, r))
	}
	return out
}

func (e *Env) checkout(rel string) string { return filepath.Join(e.C.Checkout, rel) }

func (e *Env) repros(name string) string {
	for _, w := range e.Outputs {
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

// fillBytes and fillFiles are past the policy's bound on a writable path
// (or a gigabyte and 100,000 files when it has none).
func fillBytes(p *policy.Policy) int64 {
	if p.Staging.Size > 0 {
		return p.Staging.Size + 16<<20
	}
	return 1 << 30
}

func fillFiles(p *policy.Policy) int64 {
	if p.Staging.Inodes > 0 {
		return p.Staging.Inodes + 256
	}
	return 100000
}

// fillJudge: escaped when the probe took all it asked for.
func fillJudge(id string) func(*Env, *Evidence) (bool, string) {
	return func(_ *Env, ev *Evidence) (bool, string) {
		o := ev.Obs[id]
		if o.Errno != "" {
			return o.OK, o.Detail + ": " + o.Errno
		}
		return o.OK, o.Detail
	}
}

// Catalogue returns every check, in report order.
func Catalogue() []Check {
	credStores := []string{".netrc", ".aws/credentials", ".docker/config.json", ".kube/config", ".pypirc",
		".gnupg/canary.key", ".config/gcloud/credentials.db", ".azure/accessTokens.json",
		".config/ai-triager/keys.toml", ".config/triage-sandbox/state.json"}
	checks := []Check{
		// Reading secrets.
		{ID: "FS-01", Name: "read SSH keys", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-01", "read_any", map[string]string{"canary": e.C.Token}, e.home(".ssh/id_selftest_canary")...))
			},
			Judge: readJudge("FS-01"), Fix: "keep ~/.ssh out of every mount (it is masked when a parent is mounted)"},
		{ID: "FS-02", Name: "read the GitHub CLI token", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-02", "read_any", map[string]string{"canary": e.C.Token}, e.home(".config/gh/hosts.yml")...))
			},
			Judge: readJudge("FS-02"), Fix: "keep ~/.config/gh unreadable ([sandbox] secrets)"},
		{ID: "FS-03", Name: "read git's stored credentials", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-03", "read_any", map[string]string{"canary": e.C.Token}, e.home(".git-credentials")...))
			},
			Judge: readJudge("FS-03"), Fix: "keep ~/.git-credentials unreadable"},
		{ID: "FS-04", Name: "read other credential stores", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-04", "read_any", map[string]string{"canary": e.C.Token}, e.home(credStores...)...))
			},
			Judge: readJudge("FS-04"), Fix: "keep every credential store in [sandbox] secrets"},
		{ID: "FS-06", Name: "read another process's environment", Category: "secrets", Requires: []policy.Capability{profiles.CapPidNamespace},
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-06", "proc_scan", map[string]string{"token": e.C.SentinelToken}))
			},
			Judge: okJudge("FS-06"), Fix: "the sandbox must have its own pid namespace"},
		{ID: "FS-09", Name: "read a secret through a symlink", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-09", "symlink_read", map[string]string{"canary": e.C.Token,
					"link": e.repros(".selftest-readlink"), "target": e.home(".ssh/id_selftest_canary")[0]}))
			},
			Judge: readJudge("FS-09"), Fix: "credential paths must not exist inside the sandbox"},
		{ID: "FS-10", Name: "hard-link a secret into the outputs", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-10", "hardlink", map[string]string{
					"src": e.home(".ssh/id_selftest_canary")[0], "dst": e.repros(".selftest-hardlink")}))
			},
			Judge: okJudge("FS-10"), Fix: "credential paths must not exist inside the sandbox"},
		{ID: "ENV-01", Name: "see API keys in the environment", Category: "environment",
			Steps: func(e *Env) []probe.Step {
				var vals []string
				for _, v := range e.C.Env {
					vals = append(vals, v)
				}
				return one(step("ENV-01", "env_scan", nil, vals...))
			},
			Judge: okJudge("ENV-01"), Fix: "pass variables by allow-list only; list credentials in [sandbox] env only by exact name"},
		{ID: "ENV-02", Name: "read a host process's memory", Category: "environment", Requires: []policy.Capability{profiles.CapPidNamespace},
			Steps: func(e *Env) []probe.Step {
				return one(step("ENV-02", "proc_mem", map[string]string{"pid": strconv.Itoa(e.C.SentinelPID())}))
			},
			Judge: okJudge("ENV-02"), Fix: "the sandbox must have its own pid namespace"},
		{ID: "IPC-04", Name: "reach ssh-agent, gpg-agent or the session bus", Category: "ipc",
			Steps: func(e *Env) []probe.Step { return one(step("IPC-04", "unix_connect", nil, e.C.Sockets...)) },
			Judge: okJudge("IPC-04"), Fix: "never mount agent sockets or $XDG_RUNTIME_DIR"},
		{ID: "IPC-06", Name: "reach a host socket inside a mounted directory", Category: "ipc",
			Steps: func(e *Env) []probe.Step { return one(step("IPC-06", "unix_connect", nil, e.C.MountSocket)) },
			Judge: okJudge("IPC-06"), Fix: "unix sockets under a mount must be masked"},
		{ID: "TTY-01", Name: "inject keystrokes into the terminal", Category: "ipc",
			Steps: func(e *Env) []probe.Step { return one(step("TTY-01", "tiocsti", nil)) },
			Judge: okJudge("TTY-01"), Fix: "never give the sandbox the caller's terminal (no -t)"},
		// Writes.
		{ID: "WR-01", Name: "write to the home directory", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-01", "write_any", map[string]string{"content": "# selftest\n"},
					e.home(".bashrc", ".profile", ".gitconfig", ".ssh/authorized_keys")...))
			},
			Judge: writeJudge("WR-01", func(e *Env) []string { return []string{e.C.Home} }),
			Fix:   "never mount the home directory writable"},
		{ID: "WR-02", Name: "plant a program on the host PATH", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-02", "write_any", map[string]string{"content": "#!/bin/sh\n", "mkdir": "true"},
					e.home(".local/bin/git", ".config/pip/pip.conf", ".local/lib/python3/site-packages/evil.pth")...))
			},
			Judge: writeJudge("WR-02", func(e *Env) []string { return []string{e.C.Home} }),
			Fix:   "never mount the home directory writable"},
		{ID: "WR-03", Name: "modify the project checkout", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-03", "write_any", map[string]string{"content": "evil\n"},
					e.checkout("README.md"), e.checkout("evil.txt")))
			},
			Judge: writeJudge("WR-03", func(e *Env) []string { return []string{e.C.Checkout} }),
			Fix:   "mount the checkout read-only"},
		{ID: "WR-03b", Name: "modify the workspace outside its outputs", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-03b", "write_any", map[string]string{"content": "evil\n"},
					filepath.Join(e.C.Root, "triage.toml"), filepath.Join(e.C.Root, "evil.txt")))
			},
			Judge: writeJudge("WR-03b", func(e *Env) []string { return []string{e.C.Root} }),
			Fix:   "mount the workspace root read-only; only the writable paths read-write"},
		{ID: "WR-04", Name: "change checkout file modes and times", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-04", "chmod", map[string]string{"path": e.checkout("README.md")}))
			},
			Judge: writeJudge("WR-04", func(e *Env) []string { return []string{e.checkout("README.md")} }),
			Fix:   "mount the checkout read-only"},
		{ID: "WR-05", Name: "truncate a checkout file", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-05", "truncate", map[string]string{"path": e.checkout("setup.py")}))
			},
			Judge: writeJudge("WR-05", func(e *Env) []string { return []string{e.checkout("setup.py")} }),
			Fix:   "mount the checkout read-only"},
		{ID: "WR-06", Name: "plant git config that runs code", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-06", "write_any", map[string]string{"content": "# selftest\n[core]\n\tfsmonitor = /tmp/evil\n"},
					e.checkout(".git/config")))
			},
			Judge: writeJudge("WR-06", func(e *Env) []string { return []string{e.checkout(".git")} }),
			Fix:   "mount the checkout (and its .git) read-only"},
		{ID: "WR-07", Name: "plant a git hook", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-07", "write_any", map[string]string{"content": "#!/bin/sh\n"}, e.checkout(".git/hooks/pre-commit")))
			},
			Judge: writeJudge("WR-07", func(e *Env) []string { return []string{e.checkout(".git/hooks")} }),
			Fix:   "mount the checkout (and its .git) read-only"},
		{ID: "WR-08", Name: "plant repo config that runs code on open", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-08", "write_any", map[string]string{"content": "x\n", "mkdir": "true"},
					e.checkout(".envrc"), e.checkout(".vscode/tasks.json"), e.checkout(".github/workflows/x.yml")))
			},
			Judge: writeJudge("WR-08", func(e *Env) []string { return []string{e.C.Checkout} }),
			Fix:   "mount the checkout read-only"},
		{ID: "WR-09", Name: "write outside through a planted symlink", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-09", "symlink_write", map[string]string{"content": "# selftest\n",
					"link": e.repros(".selftest-writelink"), "target": e.home(".bashrc")[0]}))
			},
			Judge: writeJudge("WR-09", func(e *Env) []string { return []string{e.C.Home} }),
			Fix:   "host paths outside the mounts must not exist inside"},
		{ID: "CI-01", Name: "inject into later CI steps ($GITHUB_ENV)", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("CI-01", "github_env", map[string]string{"fallback": e.C.Env["GITHUB_ENV"]}))
			},
			Judge: writeJudge("CI-01", func(e *Env) []string { return []string{e.C.Runner} }),
			Fix:   "never pass GITHUB_ENV or mount the runner's temp directory"},
		// Network.
		{ID: "NET-01", Name: "reach the internet", Category: "network",
			Steps: func(e *Env) []probe.Step {
				return one(step("NET-01", "udp_route", nil, "1.1.1.1:53", "[2606:4700:4700::1111]:53"))
			},
			Judge: okJudge("NET-01"), Fix: "set [sandbox] network = false (loopback only)"},
		{ID: "NET-03", Name: "reach a DNS resolver", Category: "network",
			Steps: func(e *Env) []probe.Step { return one(step("NET-03", "udp_route", nil, resolvers()...)) },
			Judge: okJudge("NET-03"), Fix: "set [sandbox] network = false (loopback only)"},
		{ID: "NET-10", Name: "reach cloud metadata endpoints", Category: "network",
			Steps: func(e *Env) []probe.Step {
				return one(step("NET-10", "udp_route", nil, "169.254.169.254:80", "[fd00:ec2::254]:80", "100.100.100.200:80"))
			},
			Judge: okJudge("NET-10"), Fix: "set [sandbox] network = false (loopback only)"},
		{ID: "NET-13", Name: "open a hypervisor channel (AF_VSOCK)", Category: "network",
			// AF_VSOCK is 40 on Linux and on macOS.
			Steps: func(e *Env) []probe.Step {
				return one(step("NET-13", "socket_family", map[string]string{"family": "40"}))
			},
			Judge: okJudge("NET-13"),
			HostLacks: func(control *Evidence) (bool, string) {
				if o := control.Obs["NET-13"]; !o.OK && o.Errno == "EAFNOSUPPORT" {
					return true, "this host has no AF_VSOCK: there is no hypervisor channel to reach"
				}
				return false, ""
			},
			Fix: "the sandbox's seccomp profile must refuse AF_VSOCK sockets"},
		{ID: "NET-11", Name: "reach this machine's other addresses", Category: "network", Requires: []policy.Capability{profiles.CapOwnLoopback},
			Steps: func(e *Env) []probe.Step { return one(step("NET-11", "tcp_connect", nil, e.C.RemoteAddrs()...)) },
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				o := ev.Obs["NET-11"]
				if o.OK || ev.RemoteHits > 0 {
					return true, fmt.Sprintf("%s; canary listener hits %d", errnoEvidence(o), ev.RemoteHits)
				}
				return false, errnoEvidence(o)
			},
			Fix: "use no network (NetworkMode none): bridge and internal networks reach the host"},
		{ID: "NET-12", Name: "reach services on the host's loopback", Category: "network", Requires: []policy.Capability{profiles.CapOwnLoopback},
			Steps: func(e *Env) []probe.Step { return one(step("NET-12", "tcp_connect", nil, e.C.Loopback.Addr)) },
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				// 127.0.0.1 inside is the sandbox's own loopback: only a hit
				// on the host's listener means the host was reached.
				o := ev.Obs["NET-12"]
				if ev.LoopbackHits > 0 {
					return true, fmt.Sprintf("host loopback listener hit %d times", ev.LoopbackHits)
				}
				return false, "only the sandbox's own loopback answered (" + o.Detail + "); host listener hits 0"
			},
			Fix: "never share the host network namespace"},
		{ID: "IPC-01", Name: "reach the Docker or containerd socket", Category: "ipc",
			Steps: func(e *Env) []probe.Step {
				return one(step("IPC-01", "unix_connect", nil, append([]string{"/var/run/docker.sock", "/run/docker.sock",
					"/run/containerd/containerd.sock", "/run/podman/podman.sock"}, e.C.RuntimeSockets...)...))
			},
			Judge: okJudge("IPC-01"), Fix: "never mount a runtime socket"},
		{ID: "IPC-05", Name: "signal a host process", Category: "ipc", Requires: []policy.Capability{profiles.CapPidNamespace},
			Steps: func(e *Env) []probe.Step {
				return one(step("IPC-05", "signal", map[string]string{"pid": strconv.Itoa(e.C.SentinelPID())}))
			},
			Judge: okJudge("IPC-05"), Fix: "the sandbox must have its own pid namespace"},
		// Privilege.
		{ID: "PRIV-01", Name: "gain privileges through setuid", Category: "privilege", Requires: []policy.Capability{profiles.CapSyscallFilter},
			Steps: func(e *Env) []probe.Step { return one(step("PRIV-01", "proc_status", nil, "NoNewPrivs")) },
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				v := ev.Obs["PRIV-01"].Values["NoNewPrivs"]
				return v != "1", "NoNewPrivs: " + v
			},
			Fix: "set no-new-privileges"},
		{ID: "PRIV-02", Name: "keep Linux capabilities", Category: "privilege", Requires: []policy.Capability{profiles.CapSyscallFilter},
			Steps: func(e *Env) []probe.Step {
				return one(step("PRIV-02", "proc_status", nil, "CapEff", "CapPrm", "CapBnd", "CapAmb"))
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				vals := ev.Obs["PRIV-02"].Values
				var held []string
				for _, k := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
					if v := vals[k]; v != "" && strings.Trim(v, "0") != "" {
						held = append(held, k+"="+v)
					}
				}
				if len(held) > 0 {
					return true, strings.Join(held, " ")
				}
				return false, "CapEff=CapPrm=CapBnd=0"
			},
			Fix: "drop all capabilities (CapDrop ALL) and add none"},
		{ID: "PRIV-03", Name: "create namespaces", Category: "privilege", Requires: []policy.Capability{profiles.CapSyscallFilter},
			Steps: func(e *Env) []probe.Step { return one(step("PRIV-03", "unshare", nil)) },
			Judge: okJudge("PRIV-03"), Fix: "keep the default seccomp profile; never add SYS_ADMIN"},
		{ID: "META-01", Name: "run without a seccomp filter", Category: "privilege", Requires: []policy.Capability{profiles.CapSyscallFilter},
			Steps: func(e *Env) []probe.Step { return one(step("META-01", "proc_status", nil, "Seccomp")) },
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				v := ev.Obs["META-01"].Values["Seccomp"]
				return v != "2", "Seccomp: " + v
			},
			Fix: "never run with seccomp=unconfined"},
		// Processes and resources.
		{ID: "PROC-02", Name: "leave a process running after the run", Category: "processes",
			Steps: func(e *Env) []probe.Step {
				return one(step("PROC-02", "spawn_detached", map[string]string{"token": "survivor-" + e.C.Token, "seconds": "60"}))
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				if len(ev.Survivors) > 0 {
					return true, fmt.Sprintf("still running after the run: pids %v", ev.Survivors)
				}
				return false, "no survivor (" + errnoEvidence(ev.Obs["PROC-02"]) + ")"
			},
			Fix: "the whole sandbox must end with the command"},
		{ID: "RES-01", Name: "fork without limit", Category: "resources", Requires: []policy.Capability{profiles.CapPidsLimit},
			Phase: PhaseProcesses,
			Steps: func(e *Env) []probe.Step {
				return one(step("RES-01", "fork_bomb", map[string]string{"cap": strconv.FormatInt(e.P.Limits.Pids+64, 10)}))
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				o := ev.Obs["RES-01"]
				if o.OK {
					return true, o.Detail
				}
				return false, fmt.Sprintf("%s after %s processes", o.Errno, o.Values["forked"])
			},
			Fix: "set a pids limit ([sandbox] pids)"},
		{ID: "RES-02", Name: "use memory beyond the limit", Category: "resources", Requires: []policy.Capability{profiles.CapMemoryLimit},
			Phase: PhaseMemory, SandboxOOMBlocks: true,
			Steps: func(e *Env) []probe.Step {
				return one(step("RES-02", "alloc_child", map[string]string{"bytes": strconv.FormatInt(e.P.Limits.Memory+256<<20, 10)}))
			},
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				if !ev.Host && ev.Result.WholeSandboxOOM {
					return false, "the memory limit killed the whole sandbox (its user-space kernel is charged for the memory), so nothing ran past the limit; reported as OOM (exit 137)"
				}
				return okJudge("RES-02")(e, ev)
			},
			Fix: "set a memory limit with no swap ([sandbox] memory)"},
		{ID: "RES-06", Name: "fill the host's disk through the outputs", Category: "resources", Requires: []policy.Capability{profiles.CapBoundedWrites},
			Phase: PhaseFill,
			Steps: func(e *Env) []probe.Step {
				return one(step("RES-06", "fill", map[string]string{"bytes": strconv.FormatInt(fillBytes(e.P), 10)}, e.repros("")))
			},
			Judge: fillJudge("RES-06"), Fix: "writable paths must be bounded staged copies ([sandbox] writable_size)"},
		{ID: "RES-07", Name: "exhaust the host's inodes through the outputs", Category: "resources", Requires: []policy.Capability{profiles.CapBoundedWrites},
			Phase: PhaseFill,
			Steps: func(e *Env) []probe.Step {
				return one(step("RES-07", "fill", map[string]string{"files": strconv.FormatInt(fillFiles(e.P), 10), "proof": "1000", "keep_unbounded": "true"}, e.repros("")))
			},
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				made, why := fillJudge("RES-07")(e, ev)
				if !made || ev.Host {
					return made, why
				}
				// The sandbox's own filesystem has no inode bound (gVisor's
				// tmpfs): what protects the host is the copy back's.
				if strings.Contains(ev.Result.CopyBackError, "past its bound") {
					return false, why + " in the sandbox (its filesystem has no inode bound); the copy back stopped at the bound: " + ev.Result.CopyBackError
				}
				return true, why + " and the copy back took them all"
			},
			Fix: "writable paths must be bounded staged copies ([sandbox] writable_inodes)"},
		// Second run: a fresh sandbox.
		{ID: "WR-11", Name: "persist files into the next run", Category: "writes", Phase: PhaseSecond,
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-11", "exists", map[string]string{"path": filepath.Join(e.Scratch.Home, ".selftest-persist")}))
			},
			Judge: okJudge("WR-11"), Fix: "HOME and TMPDIR must be fresh for each run"},
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
	checks = append(checks, outputChecks()...)
	checks = append(checks, outputsChecks()...)
	for i := range checks {
		checks[i].Expect = Blocked
	}
	return append(checks, controlChecks()...)
}

// resolvers returns this machine's DNS servers as host:53 (route lookups only).
func resolvers() []string {
	b, err := os.ReadFile("/etc/resolv.conf")
	var out []string
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "nameserver" {
				out = append(out, netJoin(f[1], "53"))
			}
		}
	}
	if len(out) == 0 {
		out = []string{"8.8.8.8:53"} // route lookup only; nothing is sent
	}
	return out
}

func netJoin(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// floodBytes is how much filler the output checks print.
const floodBytes = 8 << 20

// floodSecret is the secret the flood prints; the pipeline is told to
// redact it, as it is told the caller's credentials.
func floodSecret(c *Canaries) string { return "flood-" + c.Token }

// outputChecks judge what the output pipeline shows of hostile output: the
// terminal, the model and CI logs must get neither escapes nor workflow
// commands nor the secret, and a bounded amount of it.
func outputChecks() []Check {
	return []Check{
		{ID: "TTY-02", Name: "drive the terminal with escape sequences", Category: "output", Phase: PhaseOutput,
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				if i := strings.IndexAny(ev.Shown, "\x1b\x07"); i >= 0 {
					return true, fmt.Sprintf("raw ESC/BEL shown at byte %d", i)
				}
				return false, "escapes shown as pictures (␛ ␇)"
			},
			Fix: "show output through the pipeline (not --raw)"},
		{ID: "TTY-03", Name: "inject GitHub Actions workflow commands", Category: "output", Phase: PhaseOutput,
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				for _, line := range strings.Split(ev.Shown, "\n") {
					if runnerWouldParse(line) {
						return true, "a line the Actions runner parses reached the log: " + oneLine(line, 40)
					}
				}
				return false, "workflow-command lines neutralised (.NET whitespace and the legacy ##[ form included)"
			},
			Fix: "show output through the pipeline (not --raw)"},
		{ID: "RES-05", Name: "flood the output", Category: "output", Phase: PhaseOutput,
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				limit := int(e.P.Output.Limit)
				if len(ev.Shown) > 2*limit+4096 {
					return true, fmt.Sprintf("%d bytes shown for a %d-byte limit", len(ev.Shown), limit)
				}
				if !ev.OutStats.Truncated || ev.OutStats.BytesIn < floodBytes {
					return true, fmt.Sprintf("not flagged as truncated (%d bytes produced)", ev.OutStats.BytesIn)
				}
				return false, fmt.Sprintf("%d of %d bytes shown, truncation flagged", len(ev.Shown), ev.OutStats.BytesIn)
			},
			Fix: "keep [sandbox] output_limit small"},
		{ID: "OUT-06", Name: "start the shown tail inside a token", Category: "output", Phase: PhaseOutput,
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				token := probe.FloodTailToken(floodSecret(e.C))
				tail := ev.Shown
				if ev.Host {
					// The control: the naive cut, the last limit/2 bytes.
					tail = tail[max(0, len(tail)-int(e.P.Output.Limit)/2):]
				} else if i := strings.LastIndex(tail, " omitted ...]\n"); i >= 0 {
					tail = tail[i+len(" omitted ...]\n"):]
				} else {
					return true, "no omission marker: the tail was not cut"
				}
				if partial := leadingPartial(tail, token); partial != "" {
					return true, fmt.Sprintf("the tail starts with %q, the end of a token", oneLine(partial, 20))
				}
				return false, "the tail starts on a token boundary"
			},
			Fix: "show output through the pipeline; the tail must never start inside a token"},
		{ID: "OUT-01", Name: "print a secret into the output", Category: "output", Phase: PhaseOutput,
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				if strings.Contains(ev.Shown, floodSecret(e.C)) {
					return true, "the secret reached the output"
				}
				return false, "shown as <redacted:NAME>"
			},
			Fix: "redaction must see the caller's credentials"},
	}
}

// runnerWouldParse says whether the GitHub Actions runner takes line as a
// workflow command: after String.Trim() (.NET whitespace) it starts with
// "::", or it holds "##[" anywhere (the legacy parser's IndexOf). Written
// apart from the output package, so the check does not grade its own rule.
func runnerWouldParse(line string) bool {
	trimmed := strings.TrimLeftFunc(line, func(r rune) bool {
		switch {
		case r >= 0x09 && r <= 0x0d, r == 0x20, r == 0x85, r == 0xa0, r == 0x1680,
			r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
			return true
		}
		return false
	})
	return strings.HasPrefix(trimmed, "::") || strings.Contains(line, "##[")
}

// leadingPartial returns the proper suffix of token that text starts with
// (text begins in the middle of a token), or "".
func leadingPartial(text, token string) string {
	for n := len(token) - 1; n > 0; n-- {
		suffix := token[len(token)-n:]
		if strings.HasPrefix(text, suffix) && !strings.HasPrefix(text, token) {
			return suffix
		}
	}
	return ""
}
