package seatbelt

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// The network story (see the package documentation for the why):
//
//   - loopback (network = false): outbound only to "localhost", which
//     Seatbelt takes as every address of this host; bind and accept only
//     on "localhost" too. A reproducer's own server (bound to 127.0.0.1)
//     and a browser it starts reach each other. Every TCP or UDP port this
//     host listens on when the command starts is denied after that, and
//     port 53 always, so the host's own services and resolvers stay out of
//     reach; no DNS (the mDNSResponder socket is not allowed).
//   - outbound (network = true, accepted as weaker than a namespace of its
//     own): any destination, DNS through mDNSResponder, the host's
//     listeners still denied.
//   - proxy (a network allow-list): outbound only to the run's egress
//     proxy, one port of this host's loopback (Network.HostProxy, which
//     the run path sets); every other port of this host, every other host
//     and DNS denied. Binding and accepting as with loopback.
//
// What Seatbelt cannot express is refused, never widened: a remote host
// other than * or localhost (a literal-IP egress rule), inbound limited to
// loopback peers, and (local ip ...) on outbound, which admits every
// destination.

// Directions of a network intent.
const (
	dirOutbound = "outbound" // connect: network-outbound, matched on the peer
	dirBind     = "bind"     // bind and listen/accept: network-bind, network-inbound
)

// netIntent is one network permission in the policy's terms, before it is
// SBPL: who may be reached (Peer) or where one may listen (Local).
type netIntent struct {
	dir string
	// peer is "*", "localhost" or an IP literal: the remote end.
	peer string
	// local, for bind: "localhost" or "*", the address listened on.
	local string
	// peerLoopbackOnly: the intent wants only loopback peers to connect.
	peerLoopbackOnly bool
	// viaLocalAddress: an outbound intent phrased on the local address.
	viaLocalAddress bool
	port            int // 0 = any
}

// intents are the network's permissions.
func intents(n policy.Network) ([]netIntent, error) {
	bind := netIntent{dir: dirBind, local: "localhost"}
	switch n.Mode {
	case policy.NetworkLoopback:
		return []netIntent{{dir: dirOutbound, peer: "localhost"}, bind}, nil
	case policy.NetworkOutbound:
		return []netIntent{{dir: dirOutbound, peer: "*"}, bind}, nil
	case policy.NetworkProxy:
		port, err := proxyPort(n)
		if err != nil {
			return nil, err
		}
		return []netIntent{{dir: dirOutbound, peer: "localhost", port: port}, bind}, nil
	}
	return nil, fmt.Errorf("the seatbelt renderer has no rendering for network mode %q", n.Mode)
}

// proxyPort is the run's proxy port for a network allow-list: without one
// the only way out would be nothing, or (widened) every port of the host.
func proxyPort(n policy.Network) (int, error) {
	switch {
	case n.HostProxy == nil:
		return 0, fmt.Errorf("the seatbelt renderer needs the run's network proxy for the allow-list (%s): start the run through package sandbox, which starts the proxy on the host's loopback", n.Key)
	case n.HostProxy.Port < 1 || n.HostProxy.Port > 65535:
		return 0, fmt.Errorf("the seatbelt renderer: the network proxy's port %d is out of range", n.HostProxy.Port)
	}
	return n.HostProxy.Port, nil
}

// sbplFilter is the intent as (remote|local ip "host:port"), or why it
// cannot be one.
func (n netIntent) sbplFilter() (filter, error) {
	switch {
	case n.dir == dirOutbound && n.viaLocalAddress:
		return nil, fmt.Errorf("an outbound rule on the local address cannot be expressed: Seatbelt judges it against the unbound source address, which admits every destination")
	case n.dir == dirOutbound && n.peer != "*" && n.peer != "localhost":
		if _, err := netip.ParseAddr(n.peer); err == nil {
			return nil, fmt.Errorf("an egress rule to %s cannot be expressed: Seatbelt matches remote hosts only as * or localhost, and * would allow every host", n.peer)
		}
		return nil, fmt.Errorf("an egress rule to %q cannot be expressed: Seatbelt matches remote hosts only as * or localhost", n.peer)
	case n.dir == dirOutbound:
		return netFilter{side: "remote", proto: "ip", host: n.peer, port: n.port}, nil
	case n.dir == dirBind && n.peerLoopbackOnly:
		return nil, fmt.Errorf("inbound connections cannot be limited to loopback peers: Seatbelt ignores (remote ip) on inbound, and (local ip \"localhost:*\") covers every address of this host")
	case n.dir == dirBind && (n.local == "*" || n.local == "localhost"):
		return netFilter{side: "local", proto: "ip", host: n.local, port: n.port}, nil
	}
	return nil, fmt.Errorf("a %s rule on %q cannot be expressed", n.dir, n.local)
}

// mDNSResponder is the resolver's socket: DNS, allowed only with network on.
const mDNSResponder = "/private/var/run/mDNSResponder"

// network renders the mode's intents, unix sockets in the run directory,
// and DNS when the network is on. The host's listeners are denied in the
// deny phase.
func (r *renderer) network() error {
	list, err := intents(r.p.Network)
	if err != nil {
		return err
	}
	// The host's own network, its loopback included: a profile makes no
	// namespace; what the rules below let out decides the mode.
	r.rendered.Network = policy.NetworkLoopback
	for _, n := range list {
		switch {
		case n.peer == "*" && n.dir != dirBind:
			r.rendered.Network = policy.NetworkOutbound
		case n.port != 0 && r.rendered.Network == policy.NetworkLoopback:
			r.rendered.Network = policy.NetworkProxy
		}
		f, err := n.sbplFilter()
		if err != nil {
			return fmt.Errorf("the seatbelt renderer refuses the policy's network: %w", err)
		}
		ops, comment := []string{"network-outbound"}, "Outbound only to this host (\"localhost\" is every address of this host, not only 127.0.0.1)."
		switch {
		case n.peer == "*":
			comment = "Network on (accepted as weaker: the host's network, not a namespace of its own)."
		case n.port != 0:
			comment = "Network allow-list: outbound only to the run's egress proxy, on this port of the host's loopback\n(the proxy decides each connection; `render` shows 3128 for the port a run chooses)."
		}
		if n.dir == dirBind {
			ops, comment = []string{"network-bind", "network-inbound"}, "Listen only on this host's addresses; bind 127.0.0.1, not 0.0.0.0 or ::."
		}
		r.prof.add(phaseNetwork, rule{act: allow, ops: ops, filters: []filter{f}, comment: comment})
	}
	run := pathFilter{kind: "subpath", param: r.runParam}
	r.prof.add(phaseNetwork, rule{act: allow, ops: []string{"system-socket"}, filters: []filter{rawFilter("(socket-domain AF_UNIX)")},
		comment: "Unix sockets, bound and reached only in this run's directory."})
	r.prof.add(phaseNetwork, rule{act: allow, ops: []string{"network-bind"}, filters: []filter{unixFilter{side: "local", path: run}}})
	r.prof.add(phaseNetwork, rule{act: allow, ops: []string{"network-outbound"}, filters: []filter{unixFilter{side: "remote", path: run}}})
	if r.p.Network.Mode == policy.NetworkOutbound {
		r.prof.add(phaseNetwork, rule{act: allow, ops: []string{"network-outbound"}, comment: "DNS, with the network on.",
			filters: []filter{unixFilter{side: "remote", path: pathFilter{kind: "subpath", param: r.ps.fixed("DNS_SOCKET", mDNSResponder)}}}})
	}
	return nil
}

// hostListenerRule denies connecting to the ports this host listens on
// when the command starts, and to port 53 always (a local resolver would
// forward a lookup, and its name, to the internet). The run's own proxy
// (open, a port listening) is left out: its allow comes before the denies.
func hostListenerRule(ports []int, open int) rule {
	seen := map[int]bool{53: true, open: true}
	list := []int{53}
	for _, p := range ports {
		if !seen[p] {
			seen[p] = true
			list = append(list, p)
		}
	}
	sort.Ints(list)
	var fs []filter
	for _, p := range list {
		fs = append(fs, netFilter{side: "remote", proto: "ip", host: "localhost", port: p})
	}
	return rule{act: deny, ops: []string{"network-outbound"}, filters: fs, tagged: true,
		comment: "The host's own services: every port listening when the command started, and DNS."}
}
