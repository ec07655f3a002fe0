package policy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/egress"
)

// Explain describes the policy in words, for `triage-sandbox policy`.
func Explain(p *Policy) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	for _, section := range []func(writef, *Policy){
		explainHeader,
		explainFiles,
		explainUnreadable,
		explainInputs,
		explainNetwork,
		explainEnv,
		explainLimits,
		explainRoot,
		explainGate,
		explainFooter,
	} {
		section(w, p)
	}
	return b.String()
}

// writef writes one formatted piece of the explanation.
type writef func(format string, a ...any)

// explainHeader: the role, backend, config and audit log.
func explainHeader(w writef, p *Policy) {
	w("%s sandbox: backend %s, policy %s\n", p.Role, p.Backend, p.Hash())
	if p.Config != "" {
		w("config: %s\n", p.Config)
	} else {
		w("config: none found; built-in defaults with %s as the workspace root\n", p.WorkspaceRoot)
	}
	w("audit log: %s\n", p.AuditLog)
	if p.AllowAll {
		w("  WARNING: allow_all = true: no isolation at all; everything below is ignored\n")
	}
}

// explainFiles: what is readable and what writable.
func explainFiles(w writef, p *Policy) {
	w("\nreadable (read-only, at the same path):\n")
	for _, m := range p.Mounts {
		if m.ReadOnly {
			w("  %-50s %s\n", m.Path, m.Why)
		}
	}
	w("\nwritable:\n")
	for _, m := range p.Mounts {
		if !m.ReadOnly {
			w("  %-50s %s (%s)\n", m.Path, m.Why, m.Kind)
		}
	}
	w("  %-50s fresh empty HOME and TMPDIR for each sandbox (%d MiB each, %s); the backend places them\n",
		"(scratch)", p.Scratch.Size>>20, scratchFlags(p.Scratch))
}

// explainInputs: the host paths the policy was computed from, each with
// its owner; a built policy has none a sandbox could write (sources.go).
func explainInputs(w writef, p *Policy) {
	if len(p.Inputs) == 0 {
		return
	}
	w("\ncomputed from (no sandbox of this workspace can write these):\n")
	for _, in := range p.Inputs {
		owner := fmt.Sprintf("uid %d", in.OwnerUID)
		if in.OwnerUID < 0 {
			owner = "missing"
		}
		w("  %-50s %s; %s\n", in.Path, owner, in.What)
	}
}

// explainUnreadable: the unreadable paths and what is masked.
func explainUnreadable(w writef, p *Policy) {
	w("\nunreadable (never mounted; masked where a mount would expose them):\n")
	masked := map[string]bool{}
	for _, m := range p.Masked {
		masked[m] = true
	}
	for _, u := range p.Unreadable {
		note := ""
		if masked[u] {
			note = "  (masked: under a mount)"
		}
		w("  %s%s\n", u, note)
	}
	unreadable := map[string]bool{}
	for _, u := range p.Unreadable {
		unreadable[u] = true
	}
	hidden := hiddenSet(p.Mounts)
	for _, m := range p.Masked {
		switch {
		case unreadable[m]:
		case hidden[m]:
			w("  %s  (masked: not used by the python environment, see its base's mount)\n", m)
		default:
			w("  %s  (masked: a host socket under a mount)\n", m)
		}
	}
	for _, g := range p.GitConfigs {
		given := "git runs without it inside"
		if g.Replayed {
			given = "the rest is given to git through GIT_CONFIG_*"
		}
		w("  %s  (masked: a git config holding a credential; %s)\n", g.Path, given)
		for _, r := range g.Removed {
			w("      left out: %s\n", r)
		}
	}
}

// explainNetwork: the network mode.
func explainNetwork(w writef, p *Policy) {
	w("\nnetwork: ")
	switch p.Network.Mode {
	case NetworkLoopback:
		w("loopback only: a namespace of its own (no route out, no DNS, host listeners unreachable)\n")
	case NetworkOutbound:
		w("ON: a namespace of its own with a route out; the sandbox can reach other machines\n")
	case NetworkProxy:
		w("allow-list (%s): no route out, no DNS; the only way out is the host's proxy, which resolves each name itself and refuses loopback, link-local (metadata), private and the host's own addresses. A backend with a namespace of its own (docker, oci, local) has only its loopback and reaches the proxy through a socket bound in, forwarded to from %s; Seatbelt, which shares the host's loopback, reaches only the proxy's port there, with a password of the run\n",
			p.Network.Key, egress.ForwardAddr)
		if len(p.Network.Rules) == 0 {
			w("  (nothing allowed: every connection is refused and reported)\n")
		}
		for _, r := range p.Network.Rules {
			port := "80 and 443"
			if r.Port != 0 {
				port = strconv.Itoa(r.Port)
			}
			w("  %-32s port %-10s (from %s)\n", r.Host, port, r.From)
		}
		for _, b := range p.Network.Brokers {
			w("  brokered %s (%s): the sandbox holds a placeholder; the proxy terminates TLS to %s and puts the value from triage-sandbox's environment in on %s requests only\n",
				b.Name, b.Key, strings.Join(b.Hosts, ", "), strings.Join(b.Methods, ", "))
		}
	default:
		w("the host's own network (no isolation)\n")
	}
}

// explainEnv: the environment passed and withheld.
func explainEnv(w writef, p *Policy) {
	// Every passed variable says which allow-list entry passed it, every
	// withheld one why (the screening rule that fired, for a credential).
	w("\nenvironment passed:\n")
	for _, e := range p.Env {
		w("  %-28s %s\n", e.Name, e.Why)
	}
	w("\nenvironment withheld:\n")
	for _, d := range p.Dropped {
		mark := ""
		if d.Credential {
			mark = " [credential]"
		}
		w("  %-28s %s%s\n", d.Name, d.Why, mark)
	}
}

// timeoutSource names the key that decides the timeout.
func timeoutSource(p *Policy) string {
	if p.TimeoutDefault {
		return "the role's default; " + p.TimeoutKey + " sets it"
	}
	return p.TimeoutKey
}

// explainLimits: the identity, limits, lifetime and reuse.
func explainLimits(w writef, p *Policy) {
	w("\nruns as uid %d gid %d: %s\n", p.User.UID, p.User.GID, p.User.Why)
	w("limits: timeout %s (%s), memory %d MiB (no swap), %.2g CPUs, %d processes, %d open files\n",
		p.Limits.Timeout, timeoutSource(p), p.Limits.Memory>>20, p.Limits.CPUs, p.Limits.Pids, p.Limits.NoFile)
	w("limits: files up to %d MiB each, core dumps %d bytes, OOM score adjustment %d; lifetime: lifeline %v, TTL timeout+%s, SIGTERM grace %s\n",
		p.Limits.FileSize>>20, p.Limits.Core, p.Limits.OOMScoreAdj, p.Lifetime.Lifeline, p.Lifetime.TTLMargin, p.Lifetime.KillGrace)
	switch {
	case p.Warm.Session != "":
		w("session %q: one sandbox runs every command of the session; files in scratch persist between its commands, never into another session (each command's process tree is killed when it ends); ended after %s unused\n", p.Warm.Session, p.Warm.Idle)
	case p.Warm.Pool > 0:
		w("pool: %d sandboxes are kept started; each runs exactly one command and is then removed; the pool ends after %s unused\n", p.Warm.Pool, p.Warm.Idle)
	}
}

// explainRoot: the root filesystem and the staging of writable paths.
func explainRoot(w writef, p *Policy) {
	if p.Base.Kind == BaseImage {
		w("root filesystem: image %s\n", p.Base.Image)
	} else {
		w("root filesystem: the host's, readable only under %s and the mounts above\n", strings.Join(p.Base.HostRoots, " "))
	}
	if p.Staged() {
		w("writable paths: staged copies, each a filesystem of its own of %d MiB and %d files (nosuid, nodev), copied back after each command by descriptor (no symlink followed, no FIFO or device created, set-id bits dropped, the host's own changes win)\n",
			p.Staging.Size>>20, p.Staging.Inodes)
		for _, s := range p.Staging.Skeletons {
			w("  %s holds writable files: its other entries are read-only, anything else written there is discarded\n", s)
		}
	}
}

// explainGate: the command gate and its guard.
func explainGate(w writef, p *Policy) {
	w("gate: the deny list over the parsed shell (%s)", gateSummary(p.Gate))
	if g := p.Gate.Guard; g.Enabled {
		where := g.URL
		if where == "" {
			where = strings.Join(g.Command, " ")
		}
		w(", then the guard: model %q at %s, allowed only if safe >= %.2f and every risk <= %.2f; fails closed; cache %s, log %s\n",
			g.Model, where, g.MinSafe, g.MaxRisk, g.CachePath, g.LogPath)
	} else {
		w("; guard off\n")
	}
}

// explainFooter: the requirements, runtime, workdir and warnings.
func explainFooter(w writef, p *Policy) {
	w("requires: %s\n", joinCaps(p.Requirements()))
	if len(p.Accepted) > 0 {
		w("accepted weaker modes ([sandbox] accept_weaker): %s\n", joinCaps(p.Accepted))
	}
	if p.Runtime != "" {
		w("runtime: %s\n", p.Runtime)
	}
	w("workdir: %s\n", p.Workdir)
	for _, warn := range p.Warnings {
		w("warning: %s\n", warn)
	}
}

func scratchFlags(s Scratch) string {
	flags := []string{fmt.Sprintf("HOME mode %04o", s.HomeMode), fmt.Sprintf("TMPDIR mode %04o", s.TmpMode)}
	if s.Exec {
		flags = append(flags, "exec")
	} else {
		flags = append(flags, "noexec")
	}
	if s.NoSuid {
		flags = append(flags, "nosuid")
	}
	if s.NoDev {
		flags = append(flags, "nodev")
	}
	return strings.Join(flags, ", ")
}

func joinCaps(cs []Capability) string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c))
	}
	return strings.Join(out, ", ")
}

func gateSummary(g Gate) string {
	parts := []string{"default rules"}
	if len(g.Disable) > 0 {
		parts = append(parts, "without "+strings.Join(g.Disable, ", "))
	}
	if len(g.ConfirmRules) > 0 {
		parts = append(parts, "asking the operator for "+strings.Join(g.ConfirmRules, ", "))
	}
	if len(g.Deny) > 0 {
		parts = append(parts, fmt.Sprintf("%d extra deny patterns", len(g.Deny)))
	}
	if len(g.Confirm) > 0 {
		parts = append(parts, fmt.Sprintf("%d extra confirm patterns", len(g.Confirm)))
	}
	if g.AllowDynamic {
		parts = append(parts, "commands only known at run time allowed")
	}
	return strings.Join(parts, "; ")
}
