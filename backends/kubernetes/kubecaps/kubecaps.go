// Package kubecaps is what the default binary knows of the kubernetes
// backend without linking client-go: its name, what it enforces, the
// second binary it is compiled into, and how to build that binary.
// Package kubernetes takes its name and capabilities from here, so the
// two cannot drift apart.
package kubecaps

import (
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Name is the backend's registry name.
const Name = "kubernetes"

// Binary is the second binary the backend is compiled into (build tag
// BuildTag); the default binary hands a kubernetes run off to it.
const Binary = "triage-sandbox-kube"

// BuildTag compiles the backend into ./cmd/triage-sandbox.
const BuildTag = "kubernetes"

// Summary is the backend's one line for help texts.
const Summary = "pods through the Kubernetes API (restricted Pod Security, NetworkPolicy), for a fleet"

// HowToBuild says how to make Binary, for the one line that refuses
// without it.
const HowToBuild = "build it with `TRIAGE_SANDBOX_KUBE=1 scripts/setup.sh` or `CGO_ENABLED=0 go build -tags " + BuildTag +
	" -o " + Binary + " ./cmd/triage-sandbox` and put it beside triage-sandbox or on PATH"

// capabilities: what a pod on a cluster we know nothing else about
// guarantees. Its own pid namespace, cgroup limits, a uid of the
// policy's, the image as root, RuntimeDefault seccomp narrowed by the
// supervisor's own filter, staged paths on memory emptyDirs whose
// sizeLimit is the tmpfs size; own_loopback proven at start: a pod has the
// cluster's network, and only a NetworkPolicy controller, which the API
// cannot reveal, makes the deny-all policy hold, so before the first
// loopback-only sandbox of a namespace (again after ten minutes) the
// backend starts canary pods under that policy and refuses the start when
// one reaches a target (accept_weaker = ["own_loopback"] skips the check,
// saying so). pids_limit proven at start too: a pod spec has no process
// limit, the kubelet's podPidsLimit caps every pod of its node, so once
// the pod is scheduled the backend reads that node's kubelet
// configuration (configz, cached ten minutes) and refuses the start when
// the limit is unset, above the policy's pids or unreadable
// (accept_weaker = ["pids_limit"] skips the read, saying so).
// mask_under_mount holds trivially: no host path is mounted (the node is
// another machine).
//
// Under a RuntimeClass whose handler runs gVisor (read from the API; the
// backend takes the runtime's traits from it) the same hold, with two
// differences. The memory limit holds gVisor's kernel too, so reaching it
// may end the whole pod (reported as an OOM kill, from the holder's
// OOMKilled status), and each task costs gVisor host memory, so the
// supervisor sets gVisor's RLIMIT_NPROC before each command
// (runtimes.GVisorLimits: a small memory limit is a small process limit;
// lowered to fit the node's podPidsLimit, which counts gVisor's host tasks,
// about two per sandbox task: runtimes.GVisorFit), beside the policy's
// rlimits, which it sets on every pod (a pod's spec has none).
// And the helpers start as the sandbox's uid, as the restricted profile
// asks, not as root taking it themselves as on docker and oci
// (runtimes.Traits.HelpersStartAsRoot): gVisor before release 20251215
// lets a process open another's descriptors of the same uid through
// /proc/PID/fd, so run the node's gVisor from 20251215 on (docs/fleet.md).
var capabilities = []policy.Capability{
	profiles.CapOwnLoopback, profiles.CapOutboundNAT, profiles.CapPidNamespace, profiles.CapMemoryLimit, profiles.CapPidsLimit, profiles.CapCPULimit,
	profiles.CapUIDSwitch, profiles.CapMaskUnderMount, profiles.CapImageRoot,
	profiles.CapSyscallFilter, profiles.CapBoundedWrites,
}

// Capabilities is what every kubernetes sandbox enforces.
func Capabilities() []policy.Capability { return append([]policy.Capability(nil), capabilities...) }
