package seatbelt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

const netstat = "/usr/sbin/netstat"

// Available implements backends.Backend.
func (b *Backend) Available(ctx context.Context) error {
	fi, err := os.Stat(SandboxExec)
	if err != nil {
		return fmt.Errorf("the seatbelt backend needs %s: %w", SandboxExec, err)
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", SandboxExec)
	}
	return nil
}

// Describe implements backends.Backend.
func (b *Backend) Describe(ctx context.Context, p *policy.Policy) map[string]string {
	out := map[string]string{"sandbox_exec": SandboxExec}
	if v, err := exec.CommandContext(ctx, "/usr/bin/sw_vers", "-productVersion").Output(); err == nil {
		out["macos"] = strings.TrimSpace(string(v))
	}
	if len(b.opts.OptIns) > 0 {
		out["service_opt_ins"] = strings.Join(b.opts.OptIns, ",")
	}
	return out
}

// listeningPorts are the ports this host listens on now (netstat -an):
// the profile denies connecting to them.
func listeningPorts(ctx context.Context) ([]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, netstat, "-an").Output()
	if err != nil {
		return nil, fmt.Errorf("listing this host's listening ports (%s -an), which the sandbox must not reach: %w", netstat, err)
	}
	return parseNetstat(string(out)), nil
}

// Start implements backends.Backend: a per-run directory (HOME, TMPDIR,
// the ownership record, each command's profile) that commands then run in.
func (b *Backend) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	if err := b.Available(ctx); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		return nil, errors.New("refusing to run sandboxed commands as root: Seatbelt cannot switch to another uid; run triage-sandbox as a normal user")
	}
	return b.startBox(ctx, p, opts, hostOps{sandboxExec: SandboxExec, ports: listeningPorts})
}
