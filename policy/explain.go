package policy

import (
	"fmt"
	"strings"
)

// Explain describes the policy in words, for `triage-sandbox policy`.
func Explain(p *Policy) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("%s sandbox: backend %s, policy %s\n", p.Role, p.Backend, p.Hash())
	if p.AllowAll {
		w("  WARNING: allow_all = true: no isolation at all; everything below is ignored\n")
	}
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
	w("  %-50s fresh empty HOME for each run (%d MiB)\n", p.Scratch.Home, p.Scratch.Size>>20)
	w("  %-50s fresh empty TMPDIR for each run (%d MiB)\n", p.Scratch.Tmp, p.Scratch.Size>>20)
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
	w("\nnetwork: ")
	if p.Network.LoopbackOnly {
		w("loopback only (no route out, no DNS)\n")
	} else {
		w("ON: the sandbox can reach other machines\n")
	}
	w("\nenvironment passed:\n")
	for _, e := range p.Env {
		w("  %-28s %s\n", e.Name, e.Why)
	}
	w("\nenvironment withheld:\n")
	for _, d := range p.Dropped {
		w("  %-28s %s\n", d.Name, d.Why)
	}
	w("\nruns as uid %d gid %d: %s\n", p.User.UID, p.User.GID, p.User.Why)
	w("limits: timeout %s, memory %d MiB (no swap), %.2g CPUs, %d processes, %d open files\n",
		p.Limits.Timeout, p.Limits.Memory>>20, p.Limits.CPUs, p.Limits.Pids, p.Limits.NoFile)
	w("image: %s\n", p.Image)
	if p.Runtime != "" {
		w("runtime: %s\n", p.Runtime)
	}
	w("workdir: %s\n", p.Workdir)
	for _, warn := range p.Warnings {
		w("warning: %s\n", warn)
	}
	return b.String()
}
