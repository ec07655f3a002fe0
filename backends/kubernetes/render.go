package kubernetes

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Where this backend puts the policy's scratch inside the pod.
var scratchPaths = policy.ScratchPaths{Home: "/home/sandbox", Tmp: "/tmp"}

// holderContainer is the name of the pod's one container: the holder.
const holderContainer = "holder"

// Labels and annotations of ours. Labels select (owner, role, the sandbox's
// name); what a label value cannot hold (a host name, a time) is an
// annotation the sweep reads.
const (
	labelSandbox = "io.triage-sandbox.sandbox"
)

// Artifact is what `render` prints: the pod, the NetworkPolicy beside it
// (nil when the policy lets the sandbox out) and the exec each command
// becomes.
type Artifact struct {
	Pod           *corev1.Pod                 `json:"pod,omitempty"`
	NetworkPolicy *networkingv1.NetworkPolicy `json:"network_policy,omitempty"`
	// With kubernetes_api = "agent-sandbox": the template holding the
	// pod, the warm pool and the claim of a run (Pod is then nil).
	SandboxTemplate *asTemplate            `json:"sandbox_template,omitempty"`
	SandboxWarmPool *asWarmPool            `json:"sandbox_warm_pool,omitempty"`
	SandboxClaim    *asClaim               `json:"sandbox_claim,omitempty"`
	Exec            *corev1.PodExecOptions `json:"exec,omitempty"`
	// Copy is what the host packs for the pod's copies of the policy's
	// read-only directories: a pod mounts no host path, and what the copy
	// skips (the unreadable paths) is what it hides.
	Copy *stage.Spec `json:"copy,omitempty"`
	// NodePidsAtMost is the process limit a pod spec cannot hold: the
	// start refuses unless the node the pod lands on has a kubelet
	// podPidsLimit of at most this (pids.go); 0 where none is demanded
	// (no pids limit, or pids_limit accepted as weaker).
	NodePidsAtMost int64 `json:"node_pids_limit_at_most,omitempty"`
}

// JSON implements backends.Artifact.
func (a *Artifact) JSON() ([]byte, error) { return json.MarshalIndent(a, "", "  ") }

// RunInfo is per-sandbox data that is not policy: its name, who owns it,
// when it expires.
type RunInfo struct {
	Name        string
	Namespace   string
	ParentPID   int
	ParentStart string
	Host        string
	ExpiresAt   time.Time
	// RuntimeClass is the pod's runtimeClassName ("" the cluster's default).
	RuntimeClass string
	// Handler is the RuntimeClass's handler as the API server has it: the
	// runtime the node runs for it (runsc for gVisor); "" where it was not
	// read (render, or an API that refused it): the class's name is then
	// taken for it.
	Handler string
	// NodeName binds the pod to a node directly (no scheduler); "" leaves
	// it to the scheduler.
	NodeName string
	// CopyBytes is the size of the copy of the read-only directories the
	// pod gets (copy.go); 0 when not known (render).
	CopyBytes int64
	// NodePids is the podPidsLimit of the node the pod runs on, as read
	// at its start (pids.go); 0 when not known (render, or not read).
	NodePids int64
}

// Traits is what the pod's runtime is (runtimes.Of its handler): under
// gVisor the policy's process limit is gVisor's RLIMIT_NPROC (execRlimits)
// and the memory limit ends the whole sandbox.
func (i RunInfo) Traits() runtimes.Traits {
	if i.Handler != "" {
		return runtimes.Of(i.Handler)
	}
	return runtimes.Of(i.RuntimeClass)
}

// Rendered is one sandbox's objects.
type Rendered struct {
	Pod           *corev1.Pod
	NetworkPolicy *networkingv1.NetworkPolicy
	// Info is what it was rendered for.
	Info RunInfo
	// claim: the pod is the agent-sandbox controller's, for this claim
	// (agentsandbox.go); nil: the pod and NetworkPolicy are ours.
	claim *claimed
}

// Render turns the policy into the sandbox's pod (its one container is
// the holder) and, for a sandbox with no network, a NetworkPolicy that
// denies it every connection in and out. The pod is one the restricted
// Pod Security profile admits. The image must hold the static
// triage-sandbox binary at launch.InitPath (docs/fleet.md).
func Render(p *policy.Policy, info RunInfo) (*Rendered, error) {
	if err := launch.CheckImageRoot(p, "the kubernetes backend"); err != nil {
		return nil, err
	}
	if p.Network.Mode != policy.NetworkLoopback && p.Network.Mode != policy.NetworkOutbound {
		return nil, fmt.Errorf("the kubernetes backend has no network mode for %q", p.Network.Mode)
	}
	if p.User.UID == 0 || p.User.GID == 0 {
		return nil, fmt.Errorf("the kubernetes backend runs no sandbox as root (uid %d, gid %d): set [sandbox] user", p.User.UID, p.User.GID)
	}
	var ttl time.Duration
	if !info.ExpiresAt.IsZero() {
		ttl = max(time.Until(info.ExpiresAt), time.Second)
	}
	hold := launch.HoldSpec(p, ttl)
	hold.Modes = launch.ScratchModes(p, scratchPaths)
	copies, err := copiedDirs(p)
	if err != nil {
		return nil, err
	}
	volumes, mounts := volumes(p, copies, info.CopyBytes)
	uid, gid := int64(p.User.UID), int64(p.User.GID)
	no, yes := false, true
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: objectMeta(p, info),
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: ptr(int64(p.Lifetime.KillGrace.Round(time.Second) / time.Second)),
			// The backstop of the holder's own TTL: the kubelet ends a pod
			// whose owner and holder both failed to.
			ActiveDeadlineSeconds: activeDeadline(ttl),
			Hostname:              "sandbox",
			NodeName:              info.NodeName,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: &uid, RunAsGroup: &gid, RunAsNonRoot: &yes, FSGroup: &gid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: volumes,
			Containers: []corev1.Container{{
				Name:            holderContainer,
				Image:           p.Base.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         launch.HoldArgv(hold),
				// The policy's workdir may exist only once a staged path is
				// in place; each command starts there (its exec spec).
				WorkingDir: "/",
				Env:        env(p),
				// The holder's stdin is its lifeline and first the staged
				// copy: open once, closed when the one attach ends.
				Stdin: true, StdinOnce: true,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Resources:                resources(p),
				VolumeMounts:             mounts,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no, Privileged: &no, ReadOnlyRootFilesystem: &yes,
					RunAsNonRoot: &yes, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
		},
	}
	if len(copies) > 0 {
		pod.Spec.InitContainers = []corev1.Container{unpackInit(pod.Spec.Containers[0], copies)}
	}
	if info.RuntimeClass != "" {
		pod.Spec.RuntimeClassName = &info.RuntimeClass
	}
	out := &Rendered{Pod: pod, Info: info}
	if p.Network.Mode == policy.NetworkLoopback {
		out.NetworkPolicy = denyAll(p, info)
	}
	return out, nil
}

// activeDeadline is the pod's activeDeadlineSeconds: the TTL and a margin
// for the holder to end it first (nil: no TTL).
func activeDeadline(ttl time.Duration) *int64 {
	if ttl <= 0 {
		return nil
	}
	return ptr(int64((ttl + 30*time.Second).Round(time.Second) / time.Second))
}

func objectMeta(p *policy.Policy, info RunInfo) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: info.Name, Namespace: info.Namespace,
		Labels: map[string]string{
			profiles.LabelOwner: "triage-sandbox",
			profiles.LabelRole:  string(p.Role),
			labelSandbox:        info.Name,
		},
		Annotations: map[string]string{
			profiles.LabelPolicyHash: p.ShortHash(),
			profiles.LabelParentPID:  strconv.Itoa(info.ParentPID),
			profiles.LabelParentBoot: info.ParentStart,
			profiles.LabelParentHost: info.Host,
			profiles.LabelExpiresAt:  info.ExpiresAt.UTC().Format(time.RFC3339),
		},
	}
}

// denyAll is the NetworkPolicy of a loopback-only sandbox: it selects the
// sandbox's pod and allows nothing in or out (a cluster that enforces
// NetworkPolicy leaves it its loopback only).
func denyAll(p *policy.Policy, info RunInfo) *networkingv1.NetworkPolicy {
	meta := objectMeta(p, info)
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: meta,
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelSandbox: info.Name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// env is the policy's environment with the scratch placed.
func env(p *policy.Policy) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, kv := range p.EnvList(scratchPaths) {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out
}

// resources: the limits are the policy's; the requests are what the
// scheduler reserves. Memory is requested whole (it cannot be taken back
// from a running pod without killing it). CPU is requested at a quarter of
// the limit: the limit alone caps the pod (CFS quota), a sandbox mostly
// waits on its agent, and a pod requesting a whole small node (the
// reproducer's 2 CPUs on a 2-CPU node) would wait behind every other pod
// there, our own network check's among them, until its start times out.
func resources(p *policy.Policy) corev1.ResourceRequirements {
	l, r := corev1.ResourceList{}, corev1.ResourceList{}
	if p.Limits.Memory > 0 {
		l[corev1.ResourceMemory] = *resource.NewQuantity(p.Limits.Memory, resource.BinarySI)
		r[corev1.ResourceMemory] = l[corev1.ResourceMemory]
	}
	if p.Limits.CPUs > 0 {
		milli := int64(p.Limits.CPUs * 1000)
		l[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
		r[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpuRequest(milli), resource.DecimalSI)
	}
	return corev1.ResourceRequirements{Limits: l, Requests: r}
}

// cpuRequest is the CPU a pod limited to milli millicores requests: a
// quarter of it, at least 10m (and never more than the limit).
func cpuRequest(milli int64) int64 {
	return min(milli, max(milli/4, 10))
}

// volume is one emptyDir of the pod and where the holder mounts it.
type volume struct {
	path string
	// size is the sizeLimit (0: none: a read-only copy never grows).
	size int64
	// disk: on the node's disk, not in memory (a read-only copy: its
	// size is what the host sent, and memory would count it against the
	// sandbox's limit).
	disk, readOnly bool
}

// volumes are the pod's emptyDirs: in memory (a tmpfs of sizeLimit bytes)
// scratch, /dev/shm, the directories that make a closed image directory
// traversable, each staged writable path, and each discard copy (its
// content plus the staged paths' bound); on disk and mounted read-only,
// the other copies of the policy's read-only directories (copy.go).
// copyBytes is the copies' size (0 where not known yet: render).
func volumes(p *policy.Policy, copies []copiedDir, copyBytes int64) ([]corev1.Volume, []corev1.VolumeMount) {
	dirs := map[string]volume{scratchPaths.Home: {size: p.Scratch.Size}, scratchPaths.Tmp: {size: p.Scratch.Size}}
	if p.Limits.ShmSize > 0 {
		dirs["/dev/shm"] = volume{size: p.Limits.ShmSize}
	}
	for _, d := range p.Traversable {
		dirs[d] = volume{size: 64 << 10}
	}
	for d := range launch.StagedMounts(p) {
		dirs[d] = volume{size: p.Staging.Size}
	}
	for _, c := range copies {
		if c.File {
			continue
		}
		if c.Discard {
			dirs[c.Path] = volume{size: copyBytes + p.Staging.Size}
		} else {
			dirs[c.Path] = volume{disk: true, readOnly: true}
		}
	}
	paths := make([]string, 0, len(dirs))
	for d := range dirs {
		paths = append(paths, d)
	}
	// Parents before children, so a mount inside another lands on it.
	sort.Slice(paths, func(i, j int) bool {
		return depth(paths[i]) < depth(paths[j]) || depth(paths[i]) == depth(paths[j]) && paths[i] < paths[j]
	})
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	for i, d := range paths {
		v := dirs[d]
		name := fmt.Sprintf("v%d", i)
		src := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(v.size, resource.BinarySI)}
		if v.disk {
			src = &corev1.EmptyDirVolumeSource{}
		}
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: src}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: d, ReadOnly: v.readOnly})
	}
	// Copied files last: each a leaf over whatever volume holds its
	// directory.
	for i, g := range fileGroups(copies) {
		vols = append(vols, corev1.Volume{Name: fileVolume(i), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		for _, n := range g.Names {
			mounts = append(mounts, corev1.VolumeMount{Name: fileVolume(i), MountPath: path.Join(g.Dir, n), SubPath: n, ReadOnly: true})
		}
	}
	return vols, mounts
}

func depth(p string) int { return strings.Count(path.Clean(p), "/") }

// RenderExec is the exec one command becomes under runtime rt: the
// supervisor with the command's spec, in the holder's container.
func RenderExec(p *policy.Policy, cmd backends.Command, rt runtimes.Traits) (*corev1.PodExecOptions, error) {
	if err := backends.CheckArgv(cmd.Argv); err != nil {
		return nil, err
	}
	spec := launch.ExecSpec(p, cmd)
	spec.Seccomp, spec.Rlimits = execSeccomp, execRlimits(p, rt, 0)
	return execOptions(launch.ExecArgv(spec)), nil
}

// execRlimits are the limits the supervisor sets on itself before each
// command: a pod's spec has no rlimits. They are the policy's (open
// files, file size, core), and under gVisor RLIMIT_NPROC: the node's pids
// cgroup counts gVisor's own threads, and each task costs gVisor host
// memory charged to the pod's limit, so a command that forks up to the
// policy's pids (a pod has no pids limit of its own) would end the whole
// sandbox by OOM instead of failing a fork. gVisor's kernel enforces the
// rlimit (runtimes.GVisorLimits, as on docker and oci), lowered to what
// the node's podPidsLimit (nodePids, 0: not known) holds of gVisor's host
// tasks (runtimes.GVisorFit). Outside gVisor RLIMIT_NPROC would count
// every process of the uid on the node: none.
func execRlimits(p *policy.Policy, rt runtimes.Traits, nodePids int64) []protocol.Rlimit {
	nproc, _, ok := runtimes.GVisorLimits(rt, p)
	if !ok {
		nproc = 0
	} else {
		nproc = runtimes.GVisorFit(nproc, nodePids)
	}
	return launch.Rlimits(p, nproc)
}

func execOptions(argv []string) *corev1.PodExecOptions {
	return &corev1.PodExecOptions{Container: holderContainer, Command: argv, Stdin: true, Stdout: true, Stderr: true}
}

func ptr[T any](v T) *T { return &v }
