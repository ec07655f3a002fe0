package backends

import (
	"context"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// NetProber is a backend whose sandboxes sit on a network shared with
// other workloads (a cluster's pod network), where "loopback only" is a
// policy the network enforces, not a namespace with nothing else in it.
// The selftest asks it for targets there that exist and answer, and for a
// control: the same connects from a workload no policy of ours selects.
type NetProber interface {
	// NetTargets starts what the targets need (a listener workload) for
	// sandboxes of p and names them; Close removes it.
	NetTargets(ctx context.Context, p *policy.Policy) (NetProbe, error)
}

// NetProbe is one selftest's targets on a shared network.
type NetProbe interface {
	Targets() []NetTarget
	// Control connects to every target from a workload no policy of ours
	// selects and returns what each answered (by NetTarget.ID; "" none),
	// or why it could not run.
	Control(ctx context.Context) (map[string]string, error)
	Close(ctx context.Context) error
}

// NetTarget is one address a sandbox must not reach.
type NetTarget struct {
	// ID is short and unique (a probe step's suffix); Kind groups targets
	// into checks ("pod", "apiserver").
	ID, Kind string
	// What names it for the report.
	What string
	// Addr is host:port; Proto is "tcp" ("" too) or "udp".
	Addr, Proto string
	// Send is written after the connect ("" nothing); Expect is what the
	// target's own answer contains: the target was reached only if it
	// arrived.
	Send, Expect string
	// DNS, for udp, asks for this name as a DNS query instead of Send
	// (the answer then reads "dns answer rcode N").
	DNS string
}

// Op is the probe op that connects to t and reads its answer.
func (t NetTarget) Op() string {
	if t.Proto == "udp" {
		return "udp_token"
	}
	return "tcp_token"
}

// Args are the op's arguments.
func (t NetTarget) Args() map[string]string {
	args := map[string]string{"send": t.Send}
	if t.DNS != "" {
		args["dns"] = t.DNS
	}
	return args
}

// Unwrapper is a backend that runs its sandboxes on another (a keeper's
// wrapper): Unwrap returns that backend, so an optional interface of it
// is not hidden by the wrapper.
type Unwrapper interface {
	Unwrap() Backend
}

// NetProberOf is b's NetProber: b itself, or one a wrapper of b runs on.
// A wrapper that hid it would drop the cluster network checks silently.
func NetProberOf(b Backend) (NetProber, bool) {
	for b != nil {
		if np, ok := b.(NetProber); ok {
			return np, true
		}
		u, ok := b.(Unwrapper)
		if !ok {
			return nil, false
		}
		b = u.Unwrap()
	}
	return nil, false
}
