package runtimes

import (
	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// gVisor (runtime runsc) runs every task of the sandbox as threads of its
// own processes on the host, so the host's pids cgroup counts gVisor's
// threads, not the sandbox's processes: at the policy's limit gVisor
// itself fails and the whole sandbox dies instead of a fork failing.
// Under runsc the policy's limit is applied by gVisor's kernel
// (RLIMIT_NPROC: the sandbox identity is the only user there), and the
// host cgroup keeps a wider bound that still stops a runaway sandbox from
// exhausting the host.
const gvisorHostPidsFactor, gvisorHostPidsSlack = 4, 256

// gvisorTaskCost is what one task costs gVisor in host memory, measured
// here (ptrace platform): 580 paused tasks held 969 MiB.
const gvisorTaskCost = 2 << 20

// gvisorHelpers are the helpers that run beside a command under gVisor:
// the holder and the command's supervisor.
const gvisorHelpers = 2

// GVisorLimits are the process limits a sandbox of p gets under a runtime
// whose host pids cgroup counts its threads (runsc): the RLIMIT_NPROC
// inside gVisor's kernel and the host pids cgroup's bound. ok is false for
// any other runtime or without a pids limit.
func GVisorLimits(rt Traits, p *policy.Policy) (nproc, hostPids int64, ok bool) {
	if !rt.PidsCountThreads || p.Limits.Pids <= 0 {
		return 0, 0, false
	}
	nproc = p.Limits.Pids
	// Each task costs gVisor host memory (about 2 MiB on the ptrace
	// platform, up to 4 MiB for a bigger parent and a busy machine): past
	// what a quarter of the memory limit holds, a fork bomb would end in the
	// whole sandbox being OOM-killed instead of a failed fork. Under gVisor
	// a small memory limit is also a small process limit.
	if p.Limits.Memory > 0 {
		nproc = min(nproc, p.Limits.Memory/4/gvisorTaskCost)
	}
	// The sandbox's own helpers run as the same identity there, each with
	// its threads reserved: the holder and the command's supervisor must
	// not take the command's share (nor fail to start under a small one).
	nproc += gvisorHelpers * supervise.HelperTasks
	return nproc, p.Limits.Pids*gvisorHostPidsFactor + gvisorHostPidsSlack, true
}

// gVisor's host tasks per sandbox task (its systrap stub process and that
// process's thread) and the room its own threads (sentry, gofer) take
// beside them, measured here with runsc do: 32 host tasks idle, 249 with
// 100 sleeping tasks, 441 with 200.
const gvisorFitFactor, gvisorFitSlack = 2, 128

// GVisorFit lowers nproc (GVisorLimits') so that gVisor's host tasks for
// it fit a host pids bound set by someone else (a Kubernetes node's
// podPidsLimit on the pod's cgroup): past that bound gVisor itself fails
// and the whole sandbox dies instead of a fork failing. bound <= 0: none.
func GVisorFit(nproc, bound int64) int64 {
	if bound <= 0 {
		return nproc
	}
	return max(min(nproc, (bound-gvisorFitSlack)/gvisorFitFactor), 1)
}
