// Package oci renders a policy as an OCI runtime-spec config.json, for runc
// and crun users: the same isolation as the docker backend, with the image's
// root filesystem unpacked at ./rootfs.
package oci

import (
	"encoding/json"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// InitPath matches the docker backend's: the static binary runs as init.
const InitPath = "/.triage-sandbox/triage-sandbox"

// Spec is the artifact.
type Spec struct{ *specs.Spec }

// JSON implements backends.Artifact.
func (s Spec) JSON() ([]byte, error) { return json.MarshalIndent(s.Spec, "", "  ") }

// Render builds config.json for p and cmd.
func Render(p *policy.Policy, cmd backends.Command, selfExe string) (Spec, error) {
	if p.AllowAll {
		return Spec{}, fmt.Errorf("allow_all has no container to render: it runs unconfined on the host")
	}
	if len(cmd.Argv) == 0 {
		return Spec{}, fmt.Errorf("empty command")
	}
	if p.User.UID == 0 {
		return Spec{}, fmt.Errorf("refusing to run as uid 0 inside the sandbox")
	}
	args := append([]string{InitPath, "__init", "--"}, cmd.Argv...)
	nofile := uint64(p.Limits.NoFile)
	memory := p.Limits.Memory
	pids := p.Limits.Pids
	period := uint64(100000)
	quota := int64(p.Limits.CPUs * float64(period))
	scratch := fmt.Sprintf("size=%d", p.Scratch.Size)

	s := &specs.Spec{
		Version:  specs.Version,
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "sandbox",
		Process: &specs.Process{
			Args: args,
			Env:  p.EnvList(),
			Cwd:  p.Workdir,
			User: specs.User{UID: uint32(p.User.UID), GID: uint32(p.User.GID)},
			// Every capability set empty: nothing to gain, nothing to keep.
			Capabilities:    &specs.LinuxCapabilities{},
			NoNewPrivileges: true,
			Rlimits: []specs.POSIXRlimit{
				{Type: "RLIMIT_NOFILE", Hard: nofile, Soft: nofile},
				{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
			},
			OOMScoreAdj: intPtr(500),
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", fmt.Sprintf("size=%d", p.Limits.ShmSize)}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
			{Destination: p.Scratch.Tmp, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", scratch}},
			{Destination: p.Scratch.Home, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=0700",
				fmt.Sprintf("uid=%d", p.User.UID), fmt.Sprintf("gid=%d", p.User.GID), scratch}},
			{Destination: InitPath, Type: "bind", Source: selfExe, Options: []string{"rbind", "ro", "rprivate"}},
		},
		Linux: &specs.Linux{
			Namespaces: namespaces(p),
			Resources: &specs.LinuxResources{
				Memory: &specs.LinuxMemory{Limit: &memory, Swap: &memory},
				Pids:   &specs.LinuxPids{Limit: &pids},
				CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
			},
			MaskedPaths: append([]string{
				"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
				"/sys/firmware", "/sys/devices/virtual/powercap",
			}, p.Masked...),
			ReadonlyPaths:     []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
			RootfsPropagation: "rprivate",
		},
	}
	// runc applies no seccomp filter unless told: use Docker's default
	// profile, resolved for this spec's (empty) capabilities.
	sc, err := defaultSeccomp(s)
	if err != nil {
		return Spec{}, fmt.Errorf("building the default seccomp profile: %w", err)
	}
	s.Linux.Seccomp = sc
	for _, m := range p.Mounts {
		opts := []string{"rbind", "rprivate"}
		if m.ReadOnly {
			opts = append(opts, "ro")
		} else {
			opts = append(opts, "rw")
		}
		s.Mounts = append(s.Mounts, specs.Mount{Destination: m.Path, Type: "bind", Source: m.Path, Options: opts})
	}
	return Spec{s}, nil
}

func namespaces(p *policy.Policy) []specs.LinuxNamespace {
	ns := []specs.LinuxNamespace{
		{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
		{Type: specs.MountNamespace}, {Type: specs.CgroupNamespace},
	}
	if p.Network.LoopbackOnly {
		// A fresh network namespace holds only lo: loopback only by construction.
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	}
	return ns
}

func intPtr(i int) *int { return &i }
