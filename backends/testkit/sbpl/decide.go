package sbpl

import (
	"fmt"
	"net/netip"
)

// Request is one operation to judge. Only the fields its operation needs
// are set; a filter about an unset field does not match.
type Request struct {
	Op string
	// Path is the kernel-resolved path of a file operation.
	Path string
	// Vnode is the file's type (REGULAR-FILE, DIRECTORY, CHARACTER-DEVICE,
	// TTY, SYMLINK) when known.
	Vnode string
	// Extensions are the sandbox extensions the file carries
	// (com.apple.sandbox.pty for a pty made inside the sandbox).
	Extensions []string
	// Remote and Local are the peer and the own address of an IP socket.
	Remote, Local *Addr
	// RemoteUnix and LocalUnix are unix socket paths (connect, bind).
	RemoteUnix, LocalUnix string
	// Name is a mach service, sysctl, IOKit class or POSIX IPC name;
	// LocalName marks a per-process (local-name) mach lookup.
	Name      string
	LocalName bool
	// SocketDomain (AF_UNIX, ...) and SocketProtocol are for system-socket.
	SocketDomain   string
	SocketProtocol int
	// Target is whose process a signal or process-info call is about:
	// self, same-sandbox or other.
	Target string
}

// Addr is an IP endpoint.
type Addr struct {
	Proto string // tcp or udp
	IP    netip.Addr
	Port  int
}

// Options tune the evaluation.
type Options struct {
	// HostAddrs are this machine's own addresses: Seatbelt's "localhost"
	// matches them too.
	HostAddrs []netip.Addr
	// LastMatchOnly turns off the specific-operation rule: the last
	// matching rule of the same kind (filtered or not) wins whatever the
	// operation names.
	LastMatchOnly bool
	// DenyWins is a third reading some users report ("deny always wins,
	// whatever the order"): among the matching rules of the same kind, any
	// deny beats every allow.
	DenyWins bool
}

// Decision is the outcome of one request.
type Decision struct {
	Allow bool
	// Rule is the deciding rule; nil when the profile's default decided.
	Rule *Rule
}

// String explains the decision.
func (d Decision) String() string {
	verdict := map[bool]string{true: "allow", false: "deny"}[d.Allow]
	if d.Rule == nil {
		return verdict + " by the default"
	}
	return fmt.Sprintf("%s by rule %d: %s", verdict, d.Rule.Index, d.Rule.Text)
}

// Decide judges one request.
func (p *Profile) Decide(r Request, o Options) (Decision, error) {
	if err := checkConcrete(r.Op); err != nil {
		return Decision{}, err
	}
	var best *Rule
	bestRank := -1
	bestFiltered := false
	for _, rule := range p.Rules {
		rank := -1
		for _, op := range rule.Ops {
			rank = max(rank, opRank(op, r.Op))
		}
		if rank < 0 || !rule.matches(&r, &o) {
			continue
		}
		filtered := len(rule.Filters) > 0
		switch {
		case best == nil, filtered && !bestFiltered:
		case !filtered && bestFiltered:
			continue // an unfiltered rule never overrides a filtered one
		case o.DenyWins && filtered == bestFiltered && best.Allow != rule.Allow:
			if rule.Allow {
				continue
			}
		case !o.LastMatchOnly && rank < bestRank:
			continue // a rule naming the operation beats a later wildcard
		}
		best, bestRank, bestFiltered = rule, rank, filtered
	}
	if best != nil {
		return Decision{Allow: best.Allow, Rule: best}, nil
	}
	return Decision{Allow: p.HasDefault && p.DefaultAllow}, nil
}

// matches: an unfiltered rule always; else any of its filters.
func (rule *Rule) matches(r *Request, o *Options) bool {
	if len(rule.Filters) == 0 {
		return true
	}
	for _, f := range rule.Filters {
		if f.Match(r, o) {
			return true
		}
	}
	return false
}
