// Package local is the backend that confines host processes on Linux
// without a container runtime: the static triage-sandbox binary is re-run
// as a helper in new user, mount, pid, network, IPC, UTS and cgroup
// namespaces, builds the sandbox's own root from the policy's readable
// host roots and mounts (inside/confine), drops to the sandbox
// identity with no capabilities, no_new_privs, Landlock and a seccomp
// filter, and then holds the sandbox as the pid namespace's init. Commands
// start through the holder's control channel, so each inherits every
// restriction. Limits come from a cgroup when one can be made here.
//
// Trace phases (TRIAGE_SANDBOX_TRACE, package internal/phase): start.render,
// start.cgroup, start.prepare, start.helper-exec, start.plan,
// start.holder-ready; close.helper, close.cgroup. The helper, which cannot
// reach the trace file, relays its own (as proc "helper": forker, plan,
// enter.*, restrict.*, confine) on a pipe while the run is traced.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/inside/confine"
	"github.com/triage-sandbox/triage-sandbox/inside/seccompfilter"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// Name is the backend's registry name.
const Name = "local"

// Capabilities are what the local backend enforces for this caller: root
// switches identity and makes a cgroup (memory, pids and CPU limits); any
// other user runs the sandbox as itself, with rlimits only.
func Capabilities() []policy.Capability {
	caps := []policy.Capability{profiles.CapOwnLoopback, profiles.CapEgressProxy, profiles.CapPidNamespace, profiles.CapMaskUnderMount,
		profiles.CapHostRoot, profiles.CapBoundedWrites, profiles.CapSyscallFilter}
	if runtime.GOOS != "linux" {
		return nil
	}
	if os.Geteuid() == 0 {
		caps = append(caps, profiles.CapUIDSwitch)
		if cgroupsUsable() == nil {
			caps = append(caps, profiles.CapMemoryLimit, profiles.CapPidsLimit, profiles.CapCPULimit)
		}
	}
	return caps
}

// Backend starts confined host processes.
type Backend struct {
	// selfExe is the static binary the helper runs (env.Inside()).
	selfExe  string
	stateDir string
}

// New makes the backend; env.Inside() is the static binary the helper runs.
func New(env backends.Env) (backends.Backend, error) {
	return &Backend{selfExe: env.Inside(), stateDir: defaultStateDir()}, nil
}

// defaultStateDir keeps ownership records where only this user writes.
func defaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/run/triage-sandbox/local"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "triage-sandbox", "local")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("triage-sandbox-%d", os.Geteuid()), "local")
}

func (b *Backend) Name() string                      { return Name }
func (b *Backend) Capabilities() []policy.Capability { return Capabilities() }
func (b *Backend) SelfPath() string                  { return launch.InitPath }

// Available implements backends.Backend: every layer must be there; a
// missing one is named with what it costs and what to change.
func (b *Backend) Available(ctx context.Context) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the local backend confines processes with Linux namespaces, Landlock and seccomp; on %s use seatbelt (macOS) or docker", runtime.GOOS)
	}
	return missingLayers(confine.Probe())
}

// Ready implements backends.Backend.
func (b *Backend) Ready(ctx context.Context, p *policy.Policy) error {
	if err := b.Available(ctx); err != nil {
		return err
	}
	if b.selfExe == "" {
		return errors.New("the local backend needs the static triage-sandbox binary")
	}
	_, err := Plan(p, b.selfExe)
	return err
}

// Artifact is what `render --backend local` prints: the confinement plan,
// the seccomp rules and where the limits come from.
type Artifact struct {
	Namespaces []string             `json:"namespaces"`
	Plan       confine.Plan         `json:"plan"`
	Seccomp    seccompfilter.Filter `json:"seccomp"`
	Limits     map[string]string    `json:"limits"`
	Command    []string             `json:"command"`
	// Env is the helper's environment, which the command inherits.
	Env    []string               `json:"env"`
	Layers map[string]interface{} `json:"layers_here,omitempty"`
	// hold is the holder's spec Start gives the helper (its staged
	// paths, its forward to the proxy); cgroup the limits Start puts in
	// a cgroup (nil: none can be made here).
	hold   protocol.Hold
	cgroup *profiles.Limits
	// switched: the helper (root) maps the plan's identity to the same
	// ids on the host; otherwise they are the caller's own outside.
	switched bool
}

// JSON implements backends.Artifact.
func (a Artifact) JSON() ([]byte, error) { return json.MarshalIndent(a, "", "  ") }

// Render implements backends.Backend.
func (b *Backend) Render(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
	pl, err := Plan(p, b.selfExe)
	if err != nil {
		return nil, err
	}
	filter, err := seccompfilter.Lookup(pl.Seccomp.Set)
	if err != nil {
		return nil, err
	}
	a := Artifact{
		Namespaces: []string{"user", "mount", "pid", "network", "ipc", "uts", "cgroup"},
		Plan:       pl, Seccomp: filter, Limits: limitsPlan(p),
		Command: launch.ExecArgv(launch.ExecSpec(p, cmd)), Env: p.EnvList(ScratchPaths),
		hold: launch.HoldSpec(p, 0), switched: os.Geteuid() == 0,
	}
	if os.Geteuid() == 0 && cgroupsUsable() == nil {
		a.cgroup = &p.Limits
	}
	return a, nil
}

// limitsPlan says where each limit comes from for this caller.
func limitsPlan(p *policy.Policy) map[string]string {
	out := map[string]string{}
	via := "rlimit"
	if os.Geteuid() == 0 && cgroupsUsable() == nil {
		via = "cgroup"
	}
	if p.Limits.Memory > 0 {
		out["memory"] = fmt.Sprintf("%d bytes (%s)", p.Limits.Memory, orNone(via == "cgroup", "cgroup", "not enforced: no cgroup here"))
	}
	if p.Limits.Pids > 0 {
		out["pids"] = fmt.Sprintf("%d (%s)", p.Limits.Pids, orNone(via == "cgroup", "cgroup", "RLIMIT_NPROC: counts every process of the identity"))
	}
	if p.Limits.CPUs > 0 {
		out["cpus"] = fmt.Sprintf("%g (%s)", p.Limits.CPUs, orNone(via == "cgroup", "cgroup", "not enforced: no cgroup here"))
	}
	return out
}

func orNone(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// Describe implements backends.Backend.
func (b *Backend) Describe(ctx context.Context, p *policy.Policy) map[string]string {
	out := map[string]string{}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		out["kernel"] = string(trimNL(raw))
	}
	s := confine.Probe()
	out["landlock_abi"] = fmt.Sprint(s.LandlockABI)
	out["limits"] = "rlimits"
	if os.Geteuid() == 0 && cgroupsUsable() == nil {
		out["limits"] = "cgroup"
	}
	return out
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
