// Package oci renders a policy as an OCI runtime-spec config.json, for runc
// and crun: the same isolation as the docker backend, with the image's root
// filesystem unpacked at ./rootfs. The bundle's process is the sandbox's
// holder; each command is an exec process (`runc exec --process`), given
// in the annotation ExecProcessAnnotation.
//
// Trace phases (TRIAGE_SANDBOX_TRACE, package internal/phase): start.rootfs
// (the daemon's answer and the lease: beside the rest, or from the
// runtime's spawn on when a root is remembered) and
// start.rootfs-remembered, start.spec (beside start.bundle-dir,
// start.overlays and start.netns), start.bundle-write, start.runtime-spawn
// (with start.attach-grace beside the runtime's start: see package
// internal/attachgrace), start.holder-ready, start.oom-watch (once the
// holder is ready), start.rootfs-confirm;
// close.runtime-exit, close.delete (only when the runtime kept state),
// close.bundle.
package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// ScratchPaths is where this renderer puts the policy's scratch.
var ScratchPaths = policy.ScratchPaths{Home: "/home/sandbox", Tmp: "/tmp"}

// ExecProcessAnnotation holds the JSON process spec of the rendered command.
const ExecProcessAnnotation = "io.triage-sandbox.exec-process"

// HostsFile is the bundle's file bound read-only at /etc/hosts (a mount
// source relative to the bundle, as the runtime spec allows), and
// HostsContent what the backend writes in it: the names a sandbox with
// only its own loopback resolves with no DNS, as Docker writes them for
// --network none. An image's root has an empty /etc/hosts (Docker's init
// layer leaves it for the daemon to fill), so without it
// getaddrinfo("localhost") asked a DNS server the sandbox cannot reach:
// EAI_AGAIN, and every test server on http://localhost failed.
const (
	HostsFile    = "hosts"
	HostsContent = launch.HostsContent
)

// MaskFile is the bundle's empty, read-only file (a mount source relative
// to the bundle, like HostsFile) bound over each masked file where the
// runtime ignores the spec's maskedPaths (runtimes.Traits.IgnoresMaskedPaths).
const MaskFile = "masked"

// Spec is the artifact.
type Spec struct{ *specs.Spec }

// JSON implements backends.Artifact.
func (s Spec) JSON() ([]byte, error) { return json.MarshalIndent(s.Spec, "", "  ") }

// Render builds config.json for p, with cmd as the exec process.
func Render(p *policy.Policy, cmd backends.Command, selfExe string) (Spec, error) {
	if err := backends.CheckArgv(cmd.Argv); err != nil {
		return Spec{}, err
	}
	s, err := Bundle(p, selfExe, 0)
	if err != nil {
		return Spec{}, err
	}
	execJSON, err := json.Marshal(process(p, launch.ExecArgv(launch.ExecSpec(p, cmd))))
	if err != nil {
		return Spec{}, err
	}
	s.Annotations = map[string]string{ExecProcessAnnotation: string(execJSON)}
	return Spec{s}, nil
}

// Bundle builds the bundle's config.json for p: the holder (lifeline, TTL
// ttl when > 0, the staged paths) as its process, the image's root at
// ./rootfs (the backend points Root.Path at its cache).
func Bundle(p *policy.Policy, selfExe string, ttl time.Duration) (*specs.Spec, error) {
	return BundleHold(p, selfExe, HoldSpec(p, ttl))
}

// HoldSpec is the holder's spec Bundle runs for p: the sandbox's lifeline,
// its TTL (ttl when > 0), the staged paths and the scratch modes.
func HoldSpec(p *policy.Policy, ttl time.Duration) protocol.Hold {
	h := launch.HoldSpec(p, ttl)
	h.Modes = launch.ScratchModes(p, ScratchPaths)
	return h
}

// BundleHold is Bundle with the holder's spec given (typed until here: a
// backend adds what its runtime needs, then the argv is encoded once).
func BundleHold(p *policy.Policy, selfExe string, holdSpec protocol.Hold) (*specs.Spec, error) {
	s, err := bundleNoFilter(p, selfExe, holdSpec)
	if err != nil {
		return nil, err
	}
	// runc applies no seccomp filter unless told: use the sandbox's own
	// profile (Docker's default, narrowed), resolved for this spec's (empty)
	// capabilities.
	sc, err := defaultSeccomp(s)
	if err != nil {
		return nil, fmt.Errorf("building the seccomp profile: %w", err)
	}
	s.Linux.Seccomp = sc
	return s, nil
}

// bundleNoFilter is BundleHold without the seccomp filter, which the
// backend's start writes as JSON (seccompJSON) rather than as a struct.
func bundleNoFilter(p *policy.Policy, selfExe string, holdSpec protocol.Hold) (*specs.Spec, error) {
	if err := launch.CheckImageRoot(p, "the oci renderer"); err != nil {
		return nil, err
	}
	ns, err := namespaces(p.Network.Mode)
	if err != nil {
		return nil, err
	}
	hold := launch.HoldArgv(holdSpec)
	memory := p.Limits.Memory
	pids := p.Limits.Pids
	period := uint64(100000)
	// Rounded as dockerd derives its quota from NanoCPUs, so both agree.
	quota := int64(math.Round(p.Limits.CPUs * float64(period)))
	if quota < 1000 {
		return nil, fmt.Errorf("cpus = %g is below the smallest CPU quota a runtime applies (0.01)", p.Limits.CPUs)
	}
	s := &specs.Spec{
		Version:  specs.Version,
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "sandbox",
		Process:  process(p, hold),
		Mounts:   mounts(p, selfExe),
		Linux: &specs.Linux{
			Namespaces: ns,
			Resources: &specs.LinuxResources{
				Memory: &specs.LinuxMemory{Limit: &memory, Swap: &memory},
				Pids:   &specs.LinuxPids{Limit: &pids},
				CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
			},
			MaskedPaths:       append(profiles.KernelMaskedPaths(), p.Masked...),
			ReadonlyPaths:     profiles.KernelReadonlyPaths(),
			RootfsPropagation: "rprivate",
		},
	}
	if runtimes.Of(p.Runtime).IgnoresMaskedPaths {
		// The runtime drops MaskedPaths: the policy's masks become mounts,
		// after every mount they lie under (the kernel's entries are the
		// runtime's own /proc and /sys there, which need none).
		masks, err := maskMounts(p.Masked)
		if err != nil {
			return nil, err
		}
		s.Mounts = append(s.Mounts, masks...)
	}
	return s, nil
}

// process is the policy's process: identity, environment, no capability,
// no new privileges, rlimits and OOM score.
func process(p *policy.Policy, args []string) *specs.Process {
	oomScoreAdj := p.Limits.OOMScoreAdj
	return &specs.Process{
		Args: args,
		Env:  p.EnvList(ScratchPaths),
		Cwd:  p.Workdir,
		User: specs.User{UID: uint32(p.User.UID), GID: uint32(p.User.GID)},
		// Every capability set empty: nothing to gain, nothing to keep.
		Capabilities:    &specs.LinuxCapabilities{},
		NoNewPrivileges: true,
		Rlimits:         rlimits(p),
		OOMScoreAdj:     &oomScoreAdj,
	}
}

// rlimits are the policy's rlimits, by the runtime spec's names.
func rlimits(p *policy.Policy) []specs.POSIXRlimit {
	var out []specs.POSIXRlimit
	for _, r := range p.Rlimits() {
		out = append(out, specs.POSIXRlimit{Type: "RLIMIT_" + r.Name, Hard: uint64(r.Value), Soft: uint64(r.Value)})
	}
	return out
}

func mounts(p *policy.Policy, selfExe string) []specs.Mount {
	out := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", fmt.Sprintf("size=%d", p.Limits.ShmSize)}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
		scratchMount(p, ScratchPaths.Tmp, p.Scratch.TmpMode),
		scratchMount(p, ScratchPaths.Home, p.Scratch.HomeMode, fmt.Sprintf("uid=%d", p.User.UID), fmt.Sprintf("gid=%d", p.User.GID)),
		{Destination: launch.InitPath, Type: "bind", Source: selfExe, Options: []string{"rbind", "ro", "rprivate", "nosuid", "nodev"}},
		{Destination: "/etc/hosts", Type: "bind", Source: HostsFile, Options: []string{"rbind", "ro", "rprivate", "nosuid", "nodev", "noexec"}},
	}
	for _, dir := range p.Traversable {
		out = append(out, specs.Mount{Destination: dir, Type: "tmpfs", Source: "tmpfs", Options: launch.TraversableMountOptions(p)})
	}
	var tree []specs.Mount
	for dir, opts := range launch.StagedMounts(p) {
		tree = append(tree, specs.Mount{Destination: dir, Type: "tmpfs", Source: "tmpfs", Options: strings.Split(opts, ",")})
	}
	for _, m := range p.Mounts {
		if !m.ReadOnly && p.Staged() {
			continue // a staged copy on its own tmpfs
		}
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		// nosuid, nodev: the host's /usr holds setuid su, mount, passwd;
		// no set-id bit or device node of the host means anything inside.
		tree = append(tree, specs.Mount{Destination: m.Path, Type: "bind", Source: m.Path, Options: []string{"rbind", "rprivate", mode, "nosuid", "nodev"}})
	}
	if src, _ := launch.EgressSource(p, false); src != "" {
		// The proxy's socket: connectable, nothing else (the start refuses
		// a policy with a list but no socket, EgressSource).
		tree = append(tree, specs.Mount{Destination: launch.EgressDir, Type: "bind", Source: src,
			Options: []string{"rbind", "rprivate", "ro", "nosuid", "nodev", "noexec"}})
	}
	// A runtime mounts in order: parents (a staged skeleton) before what
	// lies inside them.
	sort.SliceStable(tree, func(i, j int) bool {
		di, dj := strings.Count(tree[i].Destination, "/"), strings.Count(tree[j].Destination, "/")
		if di != dj {
			return di < dj
		}
		return tree[i].Destination < tree[j].Destination
	})
	return append(out, tree...)
}

// maskMounts are the mounts that hide each of masked as runc hides its
// maskedPaths, for a runtime that drops them (launch.MaskKinds): the
// bundle's empty MaskFile bound read-only over a file, an empty read-only
// tmpfs over a directory. One that changes kind before the start fails
// the start. A socket such a runtime connects to is covered on the host
// at the start instead (coverSockets).
func maskMounts(masked []string) ([]specs.Mount, error) {
	files, dirs, err := launch.MaskKinds(masked)
	if err != nil {
		return nil, err
	}
	var out []specs.Mount
	for _, f := range files {
		out = append(out, specs.Mount{Destination: f, Type: "bind", Source: MaskFile,
			Options: []string{"rbind", "rprivate", "ro", "nosuid", "nodev", "noexec"}})
	}
	for _, d := range dirs {
		out = append(out, specs.Mount{Destination: d, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"ro", "nosuid", "nodev", "noexec", "mode=0555", "size=4096"}})
	}
	return out, nil
}

func scratchMount(p *policy.Policy, dest string, mode uint32, extra ...string) specs.Mount {
	opts := append([]string{fmt.Sprintf("mode=%04o", mode)}, launch.ScratchMountOptions(p.Scratch)...)
	return specs.Mount{Destination: dest, Type: "tmpfs", Source: "tmpfs", Options: append(opts, extra...)}
}

// namespaces translates the network decision: a fresh network namespace
// holds only lo. A route out needs a NAT'd namespace that a bare OCI
// runtime does not make, so outbound is refused rather than rendered as
// the host's network.
func namespaces(mode policy.NetworkMode) ([]specs.LinuxNamespace, error) {
	ns := []specs.LinuxNamespace{
		{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
		{Type: specs.MountNamespace}, {Type: specs.CgroupNamespace},
	}
	switch mode {
	case policy.NetworkLoopback, policy.NetworkProxy:
		// The allow-list's way out is the proxy's socket bound in, not a
		// route: the namespace is the loopback-only one.
		return append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace}), nil
	default:
		return nil, fmt.Errorf("the oci renderer cannot give network mode %q (a namespace with a route out needs a NAT the runtime does not make); use the docker backend or network = false", mode)
	}
}

// ExecProcess decodes the exec process a rendered spec carries.
func ExecProcess(s Spec) (*specs.Process, error) {
	raw, ok := s.Annotations[ExecProcessAnnotation]
	if !ok {
		return nil, errors.New("no exec process in the spec")
	}
	var proc specs.Process
	err := json.NewDecoder(strings.NewReader(raw)).Decode(&proc)
	return &proc, err
}
