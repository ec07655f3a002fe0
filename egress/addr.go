package egress

import (
	"net"
	"net/netip"
)

// refusedRanges are the addresses a name may not resolve to: everything
// that is not the public internet. IPv6 forms that carry an IPv4 address
// (mapped, compatible, NAT64, 6to4, Teredo) are refused whole, because the
// IPv4 address inside may be any of the others.
var refusedRanges = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this network)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "private (carrier-grade NAT, RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF protocol assignments, some cloud metadata)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved (documentation)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved (documentation)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved (documentation)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (including broadcast)"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64 (carries an IPv4 address)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64 (carries an IPv4 address)"},
	{netip.MustParsePrefix("100::/64"), "reserved (discard)"},
	{netip.MustParsePrefix("2001::/32"), "Teredo (carries an IPv4 address)"},
	{netip.MustParsePrefix("2001:db8::/32"), "reserved (documentation)"},
	{netip.MustParsePrefix("2002::/16"), "6to4 (carries an IPv4 address)"},
	{netip.MustParsePrefix("fc00::/7"), "private (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "private (site-local)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// addrRefused says why a proxy may not dial a, or "" when it may. own
// holds the host's interface addresses; test lists the upstreams allowed
// for tests and the selftest only.
func addrRefused(a netip.Addr, own []netip.Addr, test []netip.Prefix) string {
	a = a.WithZone("")
	for _, p := range test {
		if p.Contains(a) {
			return ""
		}
	}
	if !a.IsValid() {
		return "not an address"
	}
	// The host's own addresses first (their reason says most), but
	// loopback is named as such.
	for _, o := range own {
		if !o.IsLoopback() && (o.WithZone("") == a || o.Unmap() == a.Unmap()) {
			return "one of this host's own addresses"
		}
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(a) {
			return r.why
		}
	}
	return ""
}

// ownAddrs lists the host's interface addresses now (interfaces come and
// go: a container engine adds bridges while a run goes on).
func ownAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out, nil
}
