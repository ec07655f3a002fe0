// Package docker renders a policy as a hardened container and runs commands
// in it through the Docker Engine API (github.com/moby/moby/client): the
// container holds the sandbox (its lifeline and TTL), and each command runs
// under the mounted triage-sandbox binary's supervisor, started by the
// holder over its control socket or, without one, by a `docker exec`.
//
// Trace phases (TRIAGE_SANDBOX_TRACE, package internal/phase), in order:
// start.ask, start.render, start.create, then at once start.watcher,
// start.attach, start.wait, start.oom-watch and what is left of the runtime
// question (start.confirm), start.container-start, start.holder-ready;
// close.remove. For a normal user's checkout, start.overlay (within
// start.render: the daemon's volumes and keeper; the keeper is removed in
// the background once the sandbox holds the overlay).
package docker

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/seccompprofile"
)

// Where this backend puts the policy's scratch inside the container.
var scratchPaths = policy.ScratchPaths{Home: "/home/sandbox", Tmp: "/tmp"}

// Artifact is what `render` prints: the container create request and the
// exec request each command becomes.
type Artifact struct {
	Create *CreateRequest           `json:"create"`
	Exec   client.ExecCreateOptions `json:"exec"`
}

// JSON implements backends.Artifact.
func (a *Artifact) JSON() ([]byte, error) { return json.MarshalIndent(a, "", "  ") }

// CreateRequest is exactly what is sent to POST /containers/create.
type CreateRequest struct {
	Name       string                `json:"name"`
	Config     *container.Config     `json:"config"`
	HostConfig *container.HostConfig `json:"host_config"`
	// Hold is the holder's spec, typed until the container is created:
	// Config.Cmd is encoded from it (setHold), never decoded and edited.
	Hold protocol.Hold `json:"-"`
}

// setHold changes the holder's spec and encodes Config.Cmd from it.
func (r *CreateRequest) setHold(edit func(*protocol.Hold)) {
	edit(&r.Hold)
	r.Config.Cmd = launch.HoldArgv(r.Hold)
}

// RunInfo is per-sandbox data that is not policy: who owns the container,
// when it expires. Render takes it so that `render` output equals what runs.
type RunInfo struct {
	Name      string
	ParentPID int
	// ParentStart identifies the parent process across pid reuse.
	ParentStart string
	Host        string
	ExpiresAt   time.Time
}

// Render turns the policy into the create request of the sandbox's holder
// container. selfExe is the host path of the static triage-sandbox binary
// mounted as its init and exec helper. No command is in it: commands reach
// the started sandbox through Exec.
func Render(p *policy.Policy, selfExe string, info RunInfo) (*CreateRequest, error) {
	return render(p, runtimes.Of(p.Runtime), selfExe, info)
}

// render is Render under runtime rt, the runtime p names.
func render(p *policy.Policy, rt runtimes.Traits, selfExe string, info RunInfo) (*CreateRequest, error) {
	if err := launch.CheckImageRoot(p, "the docker backend"); err != nil {
		return nil, err
	}
	var ttl time.Duration
	if !info.ExpiresAt.IsZero() {
		ttl = max(time.Until(info.ExpiresAt), time.Second)
	}
	holdSpec := launch.HoldSpec(p, ttl)
	holdSpec.Modes = launch.ScratchModes(p, scratchPaths)
	holdUser, runAs, err := helperStart(p, rt)
	if err != nil {
		return nil, err
	}
	holdSpec.RunAs = runAs
	network, err := networkMode(p.Network.Mode)
	if err != nil {
		return nil, err
	}
	cfg := containerConfig(p, holdUser, launch.HoldArgv(holdSpec), info)
	host := hostConfig(p, network, selfExe)
	if err := forRuntime(host, p, rt); err != nil {
		return nil, err
	}
	return &CreateRequest{Name: info.Name, Config: cfg, HostConfig: host, Hold: holdSpec}, nil
}

// containerConfig is the holder container's configuration: its
// identity, environment, argv, image and ownership labels.
func containerConfig(p *policy.Policy, holdUser string, holdArgs []string, info RunInfo) *container.Config {
	stop := 2
	return &container.Config{
		User:         holdUser,
		Env:          p.EnvList(scratchPaths),
		Cmd:          holdArgs,
		Entrypoint:   []string{},
		Image:        p.Base.Image,
		WorkingDir:   p.Workdir,
		Hostname:     "sandbox",
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
		StopTimeout:  &stop,
		Labels: map[string]string{
			profiles.LabelOwner:      "triage-sandbox",
			profiles.LabelRole:       string(p.Role),
			profiles.LabelPolicyHash: p.ShortHash(),
			profiles.LabelParentPID:  strconv.Itoa(info.ParentPID),
			profiles.LabelParentBoot: info.ParentStart,
			profiles.LabelParentHost: info.Host,
			profiles.LabelExpiresAt:  info.ExpiresAt.UTC().Format(time.RFC3339),
		},
	}
}

// hostConfig is the holder container's confinement: network, no
// capability, read-only root, mounts, masks and limits.
func hostConfig(p *policy.Policy, network container.NetworkMode, selfExe string) *container.HostConfig {
	pids := p.Limits.Pids
	// The holder is the sandbox's pid 1 (as on oci): no docker-init, which
	// runs as the sandbox identity, stays dumpable, and a command could
	// attach to it and keep the container alive past its owner.
	noInit := false
	return &container.HostConfig{
		NetworkMode:    network,
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		AutoRemove:     true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    securityOpt(),
		ReadonlyRootfs: true,
		Privileged:     false,
		Init:           &noInit,
		IpcMode:        container.IPCModePrivate,
		CgroupnsMode:   container.CgroupnsModePrivate,
		ShmSize:        p.Limits.ShmSize,
		Tmpfs:          scratchTmpfs(p),
		Mounts:         mounts(p, selfExe),
		MaskedPaths:    append(profiles.KernelMaskedPaths(), p.Masked...),
		ReadonlyPaths:  profiles.KernelReadonlyPaths(),
		OomScoreAdj:    p.Limits.OOMScoreAdj,
		LogConfig:      container.LogConfig{Type: "none"},
		Runtime:        p.Runtime,
		Resources: container.Resources{
			Memory:     p.Limits.Memory,
			MemorySwap: p.Limits.Memory,
			NanoCPUs:   int64(p.Limits.CPUs * 1e9),
			PidsLimit:  &pids,
			Ulimits:    ulimits(p),
		},
	}
}

// forRuntime adapts host to what runtime rt lacks or needs: masks as
// mounts where it drops MaskedPaths, the identity capabilities where
// helpers start as root, gVisor's process limits.
func forRuntime(host *container.HostConfig, p *policy.Policy, rt runtimes.Traits) error {
	if rt.IgnoresMaskedPaths {
		masks, err := maskMounts(p.Masked)
		if err != nil {
			return err
		}
		host.Mounts = append(host.Mounts, masks...)
	}
	if rt.HelpersStartAsRoot {
		host.CapAdd = slices.Clone(launch.IdentityCaps)
	}
	if nproc, hostPids, ok := runtimes.GVisorLimits(rt, p); ok {
		host.Resources.PidsLimit = &hostPids
		host.Resources.Ulimits = append(host.Resources.Ulimits, &container.Ulimit{Name: "nproc", Soft: nproc, Hard: nproc})
	}
	return nil
}

// ulimits are the policy's rlimits, by docker's names ("nofile").
func ulimits(p *policy.Policy) []*container.Ulimit {
	var out []*container.Ulimit
	for _, r := range p.Rlimits() {
		out = append(out, &container.Ulimit{Name: strings.ToLower(r.Name), Soft: r.Value, Hard: r.Value})
	}
	return out
}

// RenderExec is the exec request one command becomes: the supervisor runs
// the argv with the policy's identity, environment and workdir.
func RenderExec(p *policy.Policy, cmd backends.Command) (client.ExecCreateOptions, error) {
	if err := backends.CheckArgv(cmd.Argv); err != nil {
		return client.ExecCreateOptions{}, err
	}
	spec := launch.ExecSpec(p, cmd)
	spec.Seccomp = holderexec.SeccompFor(runtimes.Of(p.Runtime))
	return execOptions(p, spec)
}

// execOptions is the exec request of the supervisor's spec.
func execOptions(p *policy.Policy, spec protocol.Exec) (client.ExecCreateOptions, error) {
	u, runAs, err := helperStart(p, runtimes.Of(p.Runtime))
	if err != nil {
		return client.ExecCreateOptions{}, err
	}
	spec.RunAs = runAs
	return client.ExecCreateOptions{
		User: u, Env: p.EnvList(scratchPaths), WorkingDir: p.Workdir, Cmd: launch.ExecArgv(spec),
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	}, nil
}

// helperStart is the user a helper's process (holder, supervisor,
// exporter) starts as under rt, and the identity its spec says to take
// itself: the sandbox identity and none, or root and the sandbox identity
// where the runtime needs the helper to take it itself
// (runtimes.Traits.HelpersStartAsRoot).
func helperStart(p *policy.Policy, rt runtimes.Traits) (string, *protocol.Identity, error) {
	if !rt.HelpersStartAsRoot {
		return user(p), nil, nil
	}
	id, err := launch.RunAs(p, true)
	return "0:0", id, err
}

// securityOpt: no new privileges, and the sandbox's own seccomp profile,
// given explicitly. Without "seccomp=" the daemon applies its built-in
// default, which depends on the engine's version (20.10's allows socket(2)
// for every family, AF_VSOCK included); seccompprofile is the profile every
// backend applies.
func securityOpt() []string {
	return []string{"no-new-privileges:true", "seccomp=" + seccompprofile.JSON()}
}

func user(p *policy.Policy) string {
	return strconv.Itoa(p.User.UID) + ":" + strconv.Itoa(p.User.GID)
}

// networkModes translates the policy's network decision.
var networkModes = map[policy.NetworkMode]container.NetworkMode{
	policy.NetworkLoopback: "none",
	policy.NetworkOutbound: "bridge",
	// The allow-list's way out is the proxy's socket bound in, not a route.
	policy.NetworkProxy: "none",
}

func networkMode(m policy.NetworkMode) (container.NetworkMode, error) {
	if n, ok := networkModes[m]; ok {
		return n, nil
	}
	return "", fmt.Errorf("the docker backend has no network mode for %q", m)
}

func mounts(p *policy.Policy, selfExe string) []mount.Mount {
	out := []mount.Mount{{
		Type: mount.TypeBind, Source: selfExe, Target: launch.InitPath, ReadOnly: true,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
	}}
	for _, m := range p.Mounts {
		if !m.ReadOnly && p.Staged() {
			continue // a staged copy on a tmpfs of its own (StagedMounts)
		}
		if systemVolume(m) {
			out = append(out, systemVolumeMount(m)) // nosuid, nodev (nosuid.go)
			continue
		}
		out = append(out, mount.Mount{
			Type: mount.TypeBind, Source: m.Path, Target: m.Path, ReadOnly: m.ReadOnly,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
	}
	if src, _ := launch.EgressSource(p, false); src != "" {
		// The proxy's socket: connectable, nothing else (the start refuses
		// a policy with a list but no socket, EgressSource).
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: src, Target: launch.EgressDir, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	return out
}

// maskMounts hide masked where the runtime drops MaskedPaths (runsc;
// launch.MaskKinds): /dev/null bound read-only over a file, as runc masks
// one, and an empty read-only tmpfs over a directory; the daemon mounts
// them after the mounts they lie under (it sorts by depth). The daemon's
// runsc connects no host socket (its runtimeArgs, scripts/setup.sh), so a
// masked socket needs no mount there.
func maskMounts(masked []string) ([]mount.Mount, error) {
	files, dirs, err := launch.MaskKinds(masked)
	if err != nil {
		return nil, err
	}
	var out []mount.Mount
	for _, f := range files {
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: "/dev/null", Target: f, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	for _, d := range dirs {
		out = append(out, mount.Mount{Type: mount.TypeTmpfs, Target: d, ReadOnly: true,
			TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o555}})
	}
	return out, nil
}

// scratchTmpfs renders the policy's scratch as two sized tmpfs mounts.
func scratchTmpfs(p *policy.Policy) map[string]string {
	out := scratchOnly(p)
	for _, dir := range p.Traversable {
		out[dir] = strings.Join(append([]string{"rw"}, launch.TraversableMountOptions(p)...), ",")
	}
	for dir, opts := range launch.StagedMounts(p) {
		out[dir] = opts
	}
	return out
}

func scratchOnly(p *policy.Policy) map[string]string {
	base := strings.Join(append([]string{"rw"}, launch.ScratchMountOptions(p.Scratch)...), ",")
	return map[string]string{
		scratchPaths.Tmp:  fmt.Sprintf("%s,mode=%o", base, p.Scratch.TmpMode),
		scratchPaths.Home: fmt.Sprintf("%s,mode=%o,uid=%d,gid=%d", base, p.Scratch.HomeMode, p.User.UID, p.User.GID),
	}
}
