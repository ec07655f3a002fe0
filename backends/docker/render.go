// Package docker renders a policy as a hardened container and runs commands
// in it through the Docker Engine API (github.com/moby/moby/client).
package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// InitPath is where the static triage-sandbox binary is mounted inside; it
// runs as the container's command (under docker's tini) and execs the argv.
const InitPath = "/.triage-sandbox/triage-sandbox"

// InitSubcommand is the hidden CLI subcommand the mounted binary runs.
const InitSubcommand = "__init"

// defaultMaskedPaths is Docker's own default list; setting MaskedPaths
// replaces it, so it is repeated here and the credential paths appended.
var defaultMaskedPaths = []string{
	"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/sys/firmware", "/sys/devices/virtual/powercap",
}

// CreateRequest is the artifact: exactly what is sent to POST /containers/create.
type CreateRequest struct {
	Name       string                `json:"name"`
	Config     *container.Config     `json:"config"`
	HostConfig *container.HostConfig `json:"host_config"`
}

// JSON implements backends.Artifact.
func (r *CreateRequest) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// RunInfo is per-run data that is not policy: who owns the container, when
// it expires. Render takes it so that `render` output equals what runs.
type RunInfo struct {
	Name      string
	ParentPID int
	// ParentStart identifies the parent process across pid reuse.
	ParentStart string
	Host        string
	ExpiresAt   time.Time
	// Lifeline: the init exits (killing everything) when its stdin closes,
	// so a killed triage-sandbox leaves nothing running.
	Lifeline bool
}

// Render turns the policy and argv into a container create request. selfExe
// is the host path of the static triage-sandbox binary mounted as init.
func Render(p *policy.Policy, cmd backends.Command, selfExe string, info RunInfo) (*CreateRequest, error) {
	if p.AllowAll {
		return nil, fmt.Errorf("allow_all has no container to render: it runs unconfined on the host")
	}
	if len(cmd.Argv) == 0 {
		return nil, fmt.Errorf("empty command: give the program to run after --")
	}
	if p.User.UID == 0 {
		return nil, fmt.Errorf("refusing to run as uid 0 inside the sandbox")
	}
	user := strconv.Itoa(p.User.UID) + ":" + strconv.Itoa(p.User.GID)

	initArgs := []string{InitPath, InitSubcommand}
	if info.Lifeline {
		initArgs = append(initArgs, "--lifeline")
	}
	if ttl := time.Until(info.ExpiresAt); !info.ExpiresAt.IsZero() && ttl > 0 {
		initArgs = append(initArgs, "--ttl", ttl.Round(time.Second).String())
	}
	initArgs = append(initArgs, "--")
	initArgs = append(initArgs, cmd.Argv...)

	mounts := []mount.Mount{{
		Type: mount.TypeBind, Source: selfExe, Target: InitPath, ReadOnly: true,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
	}}
	for _, m := range p.Mounts {
		mounts = append(mounts, mount.Mount{
			Type: mount.TypeBind, Source: m.Path, Target: m.Path, ReadOnly: m.ReadOnly,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
	}
	scratch := fmt.Sprintf("rw,nosuid,nodev,exec,size=%d", p.Scratch.Size)
	tmpfs := map[string]string{
		p.Scratch.Tmp:  scratch + ",mode=1777",
		p.Scratch.Home: fmt.Sprintf("%s,mode=0700,uid=%d,gid=%d", scratch, p.User.UID, p.User.GID),
	}

	network := container.NetworkMode("none")
	if !p.Network.LoopbackOnly {
		network = "bridge"
	}
	pids := p.Limits.Pids
	initTrue := true
	stop := 2
	cfg := &container.Config{
		User:         user,
		Env:          p.EnvList(),
		Cmd:          initArgs,
		Entrypoint:   []string{},
		Image:        p.Image,
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
			profiles.LabelRole:       p.Role,
			profiles.LabelPolicyHash: p.ShortHash(),
			profiles.LabelParentPID:  strconv.Itoa(info.ParentPID),
			profiles.LabelParentBoot: info.ParentStart,
			profiles.LabelParentHost: info.Host,
			profiles.LabelExpiresAt:  info.ExpiresAt.UTC().Format(time.RFC3339),
		},
	}
	host := &container.HostConfig{
		NetworkMode:    network,
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		AutoRemove:     true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true"},
		ReadonlyRootfs: true,
		Privileged:     false,
		Init:           &initTrue,
		IpcMode:        container.IPCModePrivate,
		PidMode:        "",
		UTSMode:        "",
		UsernsMode:     "",
		CgroupnsMode:   container.CgroupnsModePrivate,
		ShmSize:        p.Limits.ShmSize,
		Tmpfs:          tmpfs,
		Mounts:         mounts,
		MaskedPaths:    append(append([]string(nil), defaultMaskedPaths...), p.Masked...),
		OomScoreAdj:    500,
		LogConfig:      container.LogConfig{Type: "none"},
		Runtime:        p.Runtime,
		Resources: container.Resources{
			Memory:     p.Limits.Memory,
			MemorySwap: p.Limits.Memory,
			NanoCPUs:   int64(p.Limits.CPUs * 1e9),
			PidsLimit:  &pids,
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: p.Limits.NoFile, Hard: p.Limits.NoFile},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	return &CreateRequest{Name: info.Name, Config: cfg, HostConfig: host}, nil
}

// parentStart reads this process's start time (clock ticks since boot) so a
// sweep can tell a live owner from a reused pid.
func parentStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	return procStartTime(string(b))
}
