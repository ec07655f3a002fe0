package seatbelt

import (
	"fmt"
	"strings"
)

// The profile is a typed list of rules rendered in fixed phases: whatever
// a phase builder does, every deny of the last phase comes after every
// allow, so "the credential deny is the last match" is structural, not a
// matter of care in each builder.
type phase int

const (
	phaseBase  phase = iota // the embedded base: processes, sysctls, devices, platform reads
	phaseRead               // the policy's readable roots and their ancestors
	phaseWrite              // writable paths and the per-run scratch
	phaseNetwork
	phaseIPC  // mach services and what a role's tools need
	phaseDeny // credentials, masked paths, move-blocking, host listeners: always last
	numPhases
)

var phaseTitles = [numPhases]string{
	phaseBase:    "base: processes, system information, devices, platform files",
	phaseRead:    "reads: the policy's readable roots (an allow-list) and the directories above them",
	phaseWrite:   "writes: the writable paths and this run's HOME and TMPDIR",
	phaseNetwork: "network",
	phaseIPC:     "services",
	phaseDeny:    "denies, last so that nothing above can re-open them",
}

type action string

const (
	allow action = "allow"
	deny  action = "deny"
)

// rule is one (allow|deny OPS FILTERS) form.
type rule struct {
	act     action
	ops     []string
	filters []filter // alternatives; none = unfiltered
	comment string
	tagged  bool // (with message TAG): denials name the run
}

// filter renders one SBPL filter.
type filter interface{ sbpl() string }

// pathFilter is (literal|subpath P) where P is a parameter, optionally with
// a fixed suffix appended inside the profile.
type pathFilter struct {
	kind   string // literal or subpath
	param  string
	suffix string
}

func (f pathFilter) sbpl() string {
	expr := fmt.Sprintf("(param %s)", quote(f.param))
	if f.suffix != "" {
		expr = fmt.Sprintf("(string-append %s %s)", expr, quote(f.suffix))
	}
	return fmt.Sprintf("(%s %s)", f.kind, expr)
}

// netFilter is (remote|local ip|tcp|udp "host:port"); host is * or localhost.
type netFilter struct {
	side  string // remote or local
	proto string
	host  string
	port  int // 0 = *
}

func (f netFilter) sbpl() string {
	port := "*"
	if f.port > 0 {
		port = fmt.Sprint(f.port)
	}
	return fmt.Sprintf("(%s %s %s)", f.side, f.proto, quote(f.host+":"+port))
}

// unixFilter is (remote|local unix-socket PATHFILTER).
type unixFilter struct {
	side string
	path pathFilter
}

func (f unixFilter) sbpl() string {
	return fmt.Sprintf("(%s unix-socket %s)", f.side, f.path.sbpl())
}

// nameFilter is (global-name N), (global-name-prefix N) and the like.
type nameFilter struct{ kind, name string }

func (f nameFilter) sbpl() string { return fmt.Sprintf("(%s %s)", f.kind, quote(f.name)) }

// rawFilter is fixed SBPL text (socket-domain, require-all of fixed parts).
type rawFilter string

func (f rawFilter) sbpl() string { return string(f) }

// quote writes a generated string literal. Generated literals are names,
// addresses and tags, never host paths (those are parameters), so anything
// that would need an escape is a bug and panics rather than being escaped
// into a form sandbox-exec might read differently.
func quote(s string) string {
	if len(s) >= maxPath || strings.ContainsAny(s, "\"\\") || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		panic(fmt.Sprintf("seatbelt: refusing to emit the literal %q", s))
	}
	return `"` + s + `"`
}

// profile collects rules per phase.
type profile struct {
	tag    string
	base   string // the embedded base text
	phases [numPhases][]rule
}

func (p *profile) add(ph phase, r rule) { p.phases[ph] = append(p.phases[ph], r) }

// text renders the profile: header, default, then each phase in order.
func (p *profile) text() string {
	var b strings.Builder
	b.WriteString("(version 1)\n")
	b.WriteString("; triage-sandbox seatbelt profile. Every host path is a -D parameter.\n")
	fmt.Fprintf(&b, "(deny default (with message %s))\n", quote(p.tag))
	for ph := phase(0); ph < numPhases; ph++ {
		if ph != phaseBase && len(p.phases[ph]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n;; %s\n", phaseTitles[ph])
		if ph == phaseBase {
			b.WriteString(strings.TrimSpace(p.base))
			b.WriteString("\n")
		}
		for _, r := range p.phases[ph] {
			p.writeRule(&b, r)
		}
	}
	return b.String()
}

func (p *profile) writeRule(b *strings.Builder, r rule) {
	if r.comment != "" {
		for _, line := range strings.Split(r.comment, "\n") {
			b.WriteString("; " + line + "\n")
		}
	}
	fmt.Fprintf(b, "(%s %s", r.act, strings.Join(r.ops, " "))
	for _, f := range r.filters {
		b.WriteString("\n  " + f.sbpl())
	}
	if r.tagged {
		fmt.Fprintf(b, "\n  (with message %s)", quote(p.tag))
	}
	b.WriteString(")\n")
}
