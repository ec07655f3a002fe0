// Package egress is the host side of a role's allow-listed network: an HTTP
// proxy (CONNECT and plain absolute-form HTTP) on a unix socket that is
// bound into the sandbox, the sandbox's only way out of its loopback-only
// network namespace. Every connection is decided here, outside: the name is
// matched against the allow-list (package allow), resolved by the proxy
// itself, the address pinned and refused when it is loopback, link-local
// (metadata), private, multicast, unspecified or one of the host's own; a
// TLS server name or Host header that differs from the allowed name is
// refused; bounds per run on connections, bytes and time. Each decision is
// recorded for the audit log and --json.
//
// API agreed between the helpers building issue 36 (implementation may grow,
// these names stay):
//
//	type Config struct {
//		Rules    []allow.Rule
//		Resolver interface{ LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) } // nil: net.DefaultResolver
//		Dial     func(ctx context.Context, network, addr string) (net.Conn, error)                           // nil: a net.Dialer
//		// TestUpstreams: addresses allowed as upstreams although refused
//		// otherwise (loopback canaries): the selftest and tests only, never
//		// from a user's config.
//		TestUpstreams []netip.Prefix
//		Limits        Limits
//	}
//	type Limits struct { MaxConns int; MaxBytes int64; MaxDuration time.Duration } // zero: defaults
//	type Decision struct {
//		Host    string `json:"host"`
//		Port    int    `json:"port"`
//		Allowed bool   `json:"allowed"`
//		Reason  string `json:"reason,omitempty"` // why not, one line, for the model and hints
//		Rule    string `json:"rule,omitempty"`   // the entry that allowed it
//		Addr    string `json:"addr,omitempty"`   // the pinned address dialled
//		BytesUp   int64 `json:"bytes_up"`
//		BytesDown int64 `json:"bytes_down"`
//	}
//	func Listen(ctx context.Context, cfg Config, socketPath string) (*Proxy, error) // socket 0600 unless chowned by the caller
//	func (p *Proxy) Decisions() []Decision
//	func (p *Proxy) Close() error // ends every tunnel; Decisions stay readable
//
// In the sandbox: the proxy's socket is bound at SocketInSandbox; the holder
// forwards ForwardAddr (TCP on the sandbox's loopback) to it, and the command
// gets HTTP_PROXY/HTTPS_PROXY (and their lower-case and npm forms) naming
// ForwardAddr, NO_PROXY for loopback.
//
// Added beside the agreed names: Resolver (the interface above, named),
// Limits.MaxConcurrent, Decision.Method and Decision.Cut, Proxy.Dropped,
// and Serve (the same proxy on a listener the caller made); for credential
// brokering (broker.go) Config.Brokers and BrokerRoots, Decision.Brokered,
// Proxy.BrokerCA, NewPlaceholder and Authority. The seatbelt backend's
// sandbox shares the host's loopback and has no namespace to bind the
// socket into: its run's proxy is Serve on a free port of 127.0.0.1 with
// Config.Secret, a password of the run that every request must carry
// (auth.go), since any local process can reach that port.
//
// How a connection is decided, in order, each step refusing with a 403
// whose plain-text body names the host and why (after a CONNECT's 200, a
// TLS alert where the client already speaks TLS):
//
//  0. with Config.Secret, the request's Proxy-Authorization: anything but
//     the run's credentials is answered 407 and recorded with no host,
//     before its target is read;
//  1. the head: bounded (16 kB, 100 headers, one deadline for all of it),
//     strict (no bare CR, folding, control bytes, two Host headers), then
//     parsed by net/http, which frames the body;
//  2. the target: a name (never an IP literal), normalised (package allow),
//     on the allow-list for that port; a Host header equal to it;
//  3. the run's bounds: time, bytes, connections;
//  4. the name resolved by the proxy (rooted, so no search domain), every
//     address checked (addr.go); one refused address refuses the name;
//  5. CONNECT: the tunnel must open with a TLS ClientHello (bounded, with a
//     deadline) naming the same host and no encrypted inner hello; plain
//     HTTP goes as absolute-form requests instead, each judged alone, so a
//     CONNECT or plain request relayed inside a tunnel never gets through;
//  6. only then a dial, to a checked address; every byte counted against
//     the run's bound, the connection cut when it passes.
//
// A host a secret is brokered to (off by default) differs from step 5 on:
// plain HTTP to it is refused (a secret never goes in clear); its tunnel
// is not spliced but ends in TLS here (a leaf of the run's CA, HTTP/1.1
// only), and each request in it is judged again: origin form, one Host
// header naming the host, then the placeholder replaced by the value in
// any header (and in an Authorization: Basic credential) when the method
// is bound, the request refused when it holds the placeholder and the
// method is not. Upstream TLS is verified for the name; the value is
// masked in responses and in every decision.
package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
)

const (
	// SocketInSandbox is where the proxy's socket appears in the sandbox.
	SocketInSandbox = "/run/triage-sandbox/egress/proxy.sock"
	// ForwardAddr is the sandbox-loopback address the holder forwards to
	// the socket; the proxy settings name it.
	ForwardAddr = "127.0.0.1:3128"
	// CABundleInSandbox is the trust bundle (the system roots and the
	// run's broker CA) beside the socket, when a secret is brokered.
	CABundleInSandbox = "/run/triage-sandbox/egress/ca-bundle.pem"
)

// Resolver resolves names for the proxy; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is what a proxy allows and how it reaches out.
type Config struct {
	Rules    []allow.Rule
	Resolver Resolver                                                          // nil: net.DefaultResolver
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error) // nil: a net.Dialer
	// TestUpstreams: addresses allowed as upstreams although refused
	// otherwise (loopback canaries): the selftest and tests only, never
	// from a user's config.
	TestUpstreams []netip.Prefix
	Limits        Limits
	// Brokers are the secrets brokered to their hosts (broker.go); none
	// by default.
	Brokers []Broker
	// BrokerRoots verify the upstreams of brokered hosts; nil: the
	// system roots (tests give their own, never skip verification).
	BrokerRoots *x509.CertPool
	// Authority is the broker CA to present (NewAuthority); nil: one of
	// the proxy's own. A sandbox served by one proxy after another (a
	// session's, renewed per command) keeps one, which its trust bundle
	// holds.
	Authority *Authority
	// Secret, when set, is the password every request must carry as
	// Proxy-Authorization (Basic, user ProxyUser), checked before anything
	// else: for a proxy on a loopback TCP port, which every local process
	// can reach (the seatbelt backend's sandbox shares the host's
	// loopback). A request without it is answered 407 and recorded with
	// no host. Never printed, never in a Decision.
	Secret string
}

// Limits bound one run's network use. Zero fields take the defaults.
type Limits struct {
	MaxConns      int           // upstream connections in all; default 1024
	MaxConcurrent int           // client connections at once; default min(MaxConns, 64)
	MaxBytes      int64         // bytes up and down in all; default 2 GiB
	MaxDuration   time.Duration // from Listen on; default 1 hour
}

const (
	defaultMaxConns    = 1024
	defaultConcurrent  = 64
	defaultMaxBytes    = 2 << 30
	defaultMaxDuration = time.Hour
	// maxDecisions bounds the record; later decisions are counted only.
	maxDecisions = 1000
)

func (l Limits) withDefaults() Limits {
	if l.MaxConns <= 0 {
		l.MaxConns = defaultMaxConns
	}
	if l.MaxConcurrent <= 0 {
		l.MaxConcurrent = min(l.MaxConns, defaultConcurrent)
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = defaultMaxBytes
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = defaultMaxDuration
	}
	return l
}

// Decision is one connection (CONNECT) or one plain request, allowed or not.
type Decision struct {
	Host      string `json:"host"`
	Port      int    `json:"port"`
	Method    string `json:"method,omitempty"` // CONNECT, or the plain request's method
	Allowed   bool   `json:"allowed"`
	Reason    string `json:"reason,omitempty"` // why not, one line, for the model and hints
	Rule      string `json:"rule,omitempty"`   // the entry that allowed it
	Addr      string `json:"addr,omitempty"`   // the pinned address dialled
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
	Cut       string `json:"cut,omitempty"`      // why an allowed connection was ended early
	Brokered  string `json:"brokered,omitempty"` // the secret put in (its name, never its value)
}

// Proxy is a running proxy; one per run.
type Proxy struct {
	cfg    Config
	lim    Limits
	ctx    context.Context
	cancel context.CancelFunc
	ln     net.Listener
	wg     sync.WaitGroup
	slots  chan struct{} // one per client connection open
	busy   chan struct{} // one per connection being refused as too many
	ca     *brokerCA     // the run's broker CA; nil without brokers
	conns  atomic.Int64  // upstream connections dialled
	bytes  atomic.Int64  // bytes up and down, all connections
	// authRefused counts requests refused for want of credentials.
	authRefused atomic.Int64

	mu        sync.Mutex
	decisions []Decision
	dropped   int
}

// Listen starts a proxy on a new unix socket at socketPath (0600; the
// caller chowns it for the sandbox's user). An existing file there is an
// error, never removed. The proxy stops when ctx ends, MaxDuration passes
// or Close is called.
func Listen(ctx context.Context, cfg Config, socketPath string) (*Proxy, error) {
	ln, err := net.Listen("unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	if err := os.Chmod(socketPath, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	return Serve(ctx, cfg, ln)
}

// Serve starts a proxy on ln, which it closes when it stops.
func Serve(ctx context.Context, cfg Config, ln net.Listener) (*Proxy, error) {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{}).DialContext
	}
	for _, p := range cfg.TestUpstreams {
		if !p.IsValid() {
			ln.Close()
			return nil, fmt.Errorf("egress proxy: test upstream %v is not a prefix", p)
		}
	}
	lim := cfg.Limits.withDefaults()
	var ca *brokerCA
	if len(cfg.Brokers) > 0 {
		cfg.Brokers = slices.Clone(cfg.Brokers)
		for i := range cfg.Brokers {
			cfg.Brokers[i].Hosts = slices.Clone(cfg.Brokers[i].Hosts)
			cfg.Brokers[i].Methods = slices.Clone(cfg.Brokers[i].Methods)
		}
		err := checkBrokers(cfg.Brokers, cfg.Rules)
		if err == nil {
			var hosts []string
			for _, b := range cfg.Brokers {
				hosts = append(hosts, b.Hosts...)
			}
			if cfg.Authority != nil {
				ca, err = cfg.Authority.covering(hosts)
			} else {
				ca, err = newBrokerCA(hosts, lim.MaxDuration)
			}
		}
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("egress proxy: %w", err)
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, lim.MaxDuration)
	p := &Proxy{cfg: cfg, lim: lim, ca: ca, ctx: runCtx, cancel: cancel, ln: ln, slots: make(chan struct{}, lim.MaxConcurrent), busy: make(chan struct{}, busySlots)}
	stop := context.AfterFunc(runCtx, func() { ln.Close() })
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer stop()
		p.accept()
	}()
	return p, nil
}

// Decisions returns the decisions so far (the first 1000; Dropped counts
// the rest). A connection is recorded when it ends.
func (p *Proxy) Decisions() []Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.decisions)
}

// Settle waits until no client connection is open, or ctx ends. A
// connection is recorded when it ends, so a run reads its decisions after
// Settle: the command's last connection, closed as the command ended, is
// then in them rather than racing the read.
func (p *Proxy) Settle(ctx context.Context) {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for len(p.slots) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Dropped is how many decisions were not kept (past the first 1000).
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Close stops the proxy and ends every tunnel; Decisions stay readable.
func (p *Proxy) Close() error {
	p.cancel()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (p *Proxy) record(d Decision) {
	// Nothing recorded may hold a brokered value (an upstream's error
	// text could quote one).
	d.Host, d.Reason, d.Cut = p.redact(d.Host), p.redact(d.Reason), p.redact(d.Cut)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.decisions) >= maxDecisions {
		p.dropped++
		return
	}
	p.decisions = append(p.decisions, d)
}
