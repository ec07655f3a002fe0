package selftest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// resourcesChecks go past the limits: processes, memory, and the writable
// paths' bytes and inodes. Each runs in a sandbox of its own.
func resourcesChecks() []Check {
	return []Check{
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
		// Issue 39: the file-size limit reaches the command on every
		// backend (a pod's through our supervisor). No limit at all is an
		// escape too: then the write goes at a terabyte.
		{ID: "RES-08", Name: "write a file past the file-size limit", Category: "resources",
			Steps: func(e *Env) []probe.Step {
				return one(step("RES-08", "write_past", map[string]string{"bytes": strconv.FormatInt(writePastOffset(e.P), 10)}))
			},
			Judge: okJudge("RES-08"), Fix: "set a file-size limit ([sandbox] file_size) and render it (RLIMIT_FSIZE)"},
		{ID: "RES-06", Name: "fill the host's disk through the outputs", Category: "resources", Requires: []policy.Capability{profiles.CapBoundedWrites},
			Phase: PhaseFill,
			Steps: func(e *Env) []probe.Step {
				return one(step("RES-06", "fill", map[string]string{"bytes": strconv.FormatInt(fillBytes(e.P), 10)}, e.repros("")))
			},
			Judge: fillJudge("RES-06"), Fix: "writable paths must be bounded staged copies ([sandbox] writable_size)"},
		{ID: "RES-07", Name: "exhaust the host's inodes through the outputs", Category: "resources", Requires: []policy.Capability{profiles.CapBoundedWrites},
			Phase: PhaseFill,
			// The sandbox fills for real (keep_unbounded); the host control,
			// with no copy back to face, stops at the proof (hostStep).
			Steps: func(e *Env) []probe.Step {
				return one(step("RES-07", "fill", map[string]string{"files": strconv.FormatInt(fillFiles(e.P), 10), "proof": "100", "keep_unbounded": "true"}, e.repros("")))
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
	}
}

// writePastOffset is where RES-08 writes its byte: at the policy's
// file-size limit (one byte past what it allows), or a terabyte in when
// there is none.
func writePastOffset(p *policy.Policy) int64 {
	if p.Limits.FileSize > 0 {
		return p.Limits.FileSize
	}
	return 1 << 40
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
