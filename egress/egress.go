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
package egress

const (
	// SocketInSandbox is where the proxy's socket appears in the sandbox.
	SocketInSandbox = "/run/triage-sandbox/egress/proxy.sock"
	// ForwardAddr is the sandbox-loopback address the holder forwards to
	// the socket; the proxy settings name it.
	ForwardAddr = "127.0.0.1:3128"
)
