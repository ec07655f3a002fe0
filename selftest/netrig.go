package selftest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/internal/egresstest"
)

// The allow-list checks (NET-20 … NET-27) use names that resolve only
// through the selftest's own resolver (.invalid never resolves anywhere
// else) to addresses the selftest's own dialer maps to its canaries.
const (
	netSuffix = ".selftest.invalid"
	// netAllowed is on the list and resolves to its canary (NET-20).
	netAllowed = "allowed" + netSuffix
	// netUnlisted is not on the list; it resolves to a canary (NET-21).
	netUnlisted = "unlisted" + netSuffix
	// netMetadata, netLoopback and netPrivate are on the list and resolve to
	// the metadata, the host's loopback and a private address (NET-22 … 24).
	netMetadata = "metadata" + netSuffix
	netLoopback = "loopback" + netSuffix
	netPrivate  = "private" + netSuffix
	// netHostHdr is on the list with its own canary; NET-25 asks for it
	// with another allowed name in the Host header.
	netHostHdr = "hosthdr" + netSuffix
	// netOther is on the list with its own canary: the Host header NET-25
	// sends, so a proxy that followed it would reach a canary no other
	// check asks for.
	netOther = "other" + netSuffix
	// netTunnel and netInner are on the list with canaries of their own:
	// NET-26 relays a CONNECT for netInner inside a tunnel to netTunnel.
	netTunnel = "tunnel" + netSuffix
	netInner  = "inner" + netSuffix
	// netBig is on the list; its canary serves netBigSize bytes, past the
	// network phase's byte bound (NET-28).
	netBig = "big" + netSuffix
)

// The network phase's byte bound and the download past it (NET-28).
const (
	netMaxBytes = 256 << 10
	netBigSize  = 4 << 20
)

// netTargets: each name's address in the selftest's resolver. The canary
// addresses are 127.0.0.2 and up, never 127.0.0.1; port 80 on them is
// mapped by the dialer to the run's canary listener.
var netTargets = map[string]netip.Addr{
	netAllowed:  netip.MustParseAddr("127.0.0.2"),
	netUnlisted: netip.MustParseAddr("127.0.0.3"),
	netHostHdr:  netip.MustParseAddr("127.0.0.4"),
	netOther:    netip.MustParseAddr("127.0.0.5"),
	netTunnel:   netip.MustParseAddr("127.0.0.6"),
	netInner:    netip.MustParseAddr("127.0.0.7"),
	netBig:      netip.MustParseAddr("127.0.0.8"),
	netMetadata: netip.MustParseAddr("169.254.169.254"),
	netLoopback: netip.MustParseAddr("127.0.0.1"),
	netPrivate:  netip.MustParseAddr("10.0.0.1"),
}

// netCanaryNames are the names whose address is a canary.
var netCanaryNames = []string{netAllowed, netUnlisted, netHostHdr, netOther, netTunnel, netInner, netBig}

// netRules is the allow-list of the network phase's sandbox: derived here,
// in Go; no config can produce it (its names never resolve elsewhere).
func netRules() []allow.Rule {
	var rules []allow.Rule
	for _, n := range []string{netAllowed, netMetadata, netLoopback, netPrivate, netHostHdr, netOther, netTunnel, netInner, netBig} {
		rules = append(rules, allow.Rule{Host: n, Port: 80, From: "selftest"})
	}
	return rules
}

// netRecord is what one run's rig saw: every dial the proxy asked for and
// the arrivals at each canary.
type netRecord struct {
	Decisions []egress.Decision
	// Dials are the addresses the proxy dialled (or tried to: one not a
	// canary's is refused by the dialer, and recorded).
	Dials []string
	// Hits are the requests each name's canary received.
	Hits map[string]int
	// DirectHits are the arrivals at the host-loopback canaries of NET-27
	// (TCP connections and UDP datagrams).
	DirectHits int
}

// netRig is one run's canaries, resolver and dialer: the sandbox run and
// its control each have their own, so their records never mix.
type netRig struct {
	mu   sync.Mutex
	rec  netRecord
	http map[string]net.Listener // by name
	tcp  net.Listener            // NET-27
	udp  net.PacketConn          // NET-27
	wg   sync.WaitGroup
}

// newNetRig starts the canaries on 127.0.0.2.
func newNetRig() (*netRig, error) {
	r := &netRig{http: map[string]net.Listener{}, rec: netRecord{Hits: map[string]int{}}}
	fail := func(err error) (*netRig, error) {
		r.Close()
		return nil, fmt.Errorf("the network canaries on 127.0.0.2: %w", err)
	}
	for _, n := range netCanaryNames {
		l, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			return fail(err)
		}
		r.http[n] = l
		r.wg.Add(1)
		go r.serveHTTP(n, l)
	}
	var err error
	if r.tcp, err = net.Listen("tcp", "127.0.0.2:0"); err != nil {
		return fail(err)
	}
	if r.udp, err = net.ListenPacket("udp", "127.0.0.2:0"); err != nil {
		return fail(err)
	}
	r.wg.Add(2)
	go r.serveDirectTCP()
	go r.serveDirectUDP()
	return r, nil
}

func (r *netRig) serveHTTP(name string, l net.Listener) {
	defer r.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.rec.Hits[name]++
		r.mu.Unlock()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil || strings.TrimSpace(line) == "" {
				break
			}
		}
		if name == netBig {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", netBigSize)
			_, _ = c.Write(make([]byte, netBigSize))
		} else {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\ncanary-ok\r\n")
		}
		c.Close()
	}
}

func (r *netRig) serveDirectTCP() {
	defer r.wg.Done()
	for {
		c, err := r.tcp.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.rec.DirectHits++
		r.mu.Unlock()
		c.Close()
	}
}

func (r *netRig) serveDirectUDP() {
	defer r.wg.Done()
	buf := make([]byte, 512)
	for {
		if _, _, err := r.udp.ReadFrom(buf); err != nil {
			return
		}
		r.mu.Lock()
		r.rec.DirectHits++
		r.mu.Unlock()
	}
}

// directAddrs are NET-27's targets: the TCP and the UDP canary.
func (r *netRig) directAddrs() (tcp, udp string) {
	return r.tcp.Addr().String(), r.udp.LocalAddr().String()
}

// LookupNetIP is the selftest's resolver: its own names only.
func (r *netRig) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := netTargets[strings.TrimSuffix(host, ".")]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host (the selftest's resolver)", Name: host, IsNotFound: true}
}

// dial records every address the proxy dials; only a canary's (port 80
// on its address) is connected, to the run's listener for it. Anything
// else is refused: the selftest never reaches past this machine's
// loopback, and the record makes the check fail.
func (r *netRig) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	r.rec.Dials = append(r.rec.Dials, addr)
	r.mu.Unlock()
	for _, n := range netCanaryNames {
		if addr == netip.AddrPortFrom(netTargets[n], 80).String() {
			return (&net.Dialer{}).DialContext(ctx, network, r.http[n].Addr().String())
		}
	}
	return nil, fmt.Errorf("the selftest's dialer: %s is not one of its canaries", addr)
}

// hook gives a run's proxy the rig (the canaries as its only upstreams).
func (r *netRig) hook() egresstest.Hook {
	var ups []netip.Prefix
	for _, n := range netCanaryNames {
		ups = append(ups, netip.PrefixFrom(netTargets[n], 32))
	}
	return egresstest.Hook{Upstreams: ups, Resolver: r, Dial: r.dial, MaxBytes: netMaxBytes}
}

// record is what the rig saw, with the proxy's decisions.
func (r *netRig) record(ds []egress.Decision) *netRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.rec
	rec.Dials = slices.Clone(rec.Dials)
	rec.Hits = map[string]int{}
	for k, v := range r.rec.Hits {
		rec.Hits[k] = v
	}
	rec.Decisions = ds
	return &rec
}

// Close stops every canary.
func (r *netRig) Close() {
	for _, l := range r.http {
		l.Close()
	}
	if r.tcp != nil {
		r.tcp.Close()
	}
	if r.udp != nil {
		r.udp.Close()
	}
	r.wg.Wait()
}
