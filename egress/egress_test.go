package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
)

// upstreamAddr is where the canaries listen: a loopback address other
// than 127.0.0.1, so that a name resolving to 127.0.0.1 stays refused while
// the canaries are allowed as TestUpstreams.
const upstreamAddr = "127.0.0.2"

// world is one test's proxy, canaries, resolver and dialer. Nothing in it
// can reach past this machine's loopback: the dialer fails the test on any
// other address, and names come from the test resolver only.
type world struct {
	t         testing.TB
	plain     *httptest.Server
	tls       *httptest.Server
	plainPort int
	tlsPort   int
	names     map[string][]netip.Addr
	dials     atomic.Int64
	lookups   atomic.Int64
	proxy     *Proxy
	sock      string
	// addr and secret: the proxy on a loopback TCP port with credentials.
	addr, secret string
}

func canary(w http.ResponseWriter, r *http.Request) {
	if n, err := strconv.Atoi(r.URL.Query().Get("bytes")); err == nil {
		w.Header().Set("Content-Length", strconv.Itoa(n))
		buf := make([]byte, 64<<10)
		for i := range buf {
			buf[i] = byte(i)
		}
		for n > 0 {
			k, err := w.Write(buf[:min(n, len(buf))])
			if err != nil {
				return
			}
			n -= k
		}
		return
	}
	fmt.Fprintf(w, "canary %s %s", r.Host, r.Header.Get("Proxy-Authorization"))
}

func listenUpstream(t testing.TB) net.Listener {
	ln, err := net.Listen("tcp", upstreamAddr+":0")
	if err != nil {
		t.Fatalf("a canary needs %s (loopback): %v", upstreamAddr, err)
	}
	return ln
}

func portOf(s *httptest.Server) int {
	return s.Listener.Addr().(*net.TCPAddr).Port
}

func newWorld(t testing.TB, lim Limits, extra ...string) *world {
	t.Helper()
	return newWorldOn(t, lim, "", extra...)
}

// newWorldOn is newWorld with the proxy on a loopback TCP port asking for
// secret's credentials when secret is not "" (as the seatbelt backend
// runs it), else on a unix socket.
func newWorldOn(t testing.TB, lim Limits, secret string, extra ...string) *world {
	t.Helper()
	w := &world{t: t, secret: secret}
	w.plain = httptest.NewUnstartedServer(http.HandlerFunc(canary))
	w.plain.Listener = listenUpstream(t)
	w.plain.Start()
	t.Cleanup(w.plain.Close)
	w.tls = httptest.NewUnstartedServer(http.HandlerFunc(canary))
	w.tls.Listener = listenUpstream(t)
	w.tls.Config.ErrorLog = log.New(io.Discard, "", 0) // refused tunnels end handshakes early, by design
	w.tls.StartTLS()
	t.Cleanup(w.tls.Close)
	w.plainPort, w.tlsPort = portOf(w.plain), portOf(w.tls)

	up := netip.MustParseAddr(upstreamAddr)
	w.names = map[string][]netip.Addr{
		"plain.test":     {up},
		"tls.test":       {up},
		"other.test":     {up},
		"loop.test":      {netip.MustParseAddr("127.0.0.1")},
		"meta.test":      {netip.MustParseAddr("169.254.169.254")},
		"private.test":   {netip.MustParseAddr("10.0.0.1")},
		"cgnat.test":     {netip.MustParseAddr("100.64.0.1")},
		"mapped.test":    {netip.MustParseAddr("::ffff:127.0.0.2")},
		"v6local.test":   {netip.MustParseAddr("fe80::1")},
		"ula.test":       {netip.MustParseAddr("fd00::1")},
		"multicast.test": {netip.MustParseAddr("224.0.0.1")},
		"mixed.test":     {up, netip.MustParseAddr("10.0.0.1")},
	}
	if own := ownNonLoopback(t); own.IsValid() {
		w.names["own.test"] = []netip.Addr{own}
	}
	entries := []string{"other.test"}
	for name := range w.names {
		if name != "other.test" {
			entries = append(entries, fmt.Sprintf("%s:%d", name, w.plainPort), fmt.Sprintf("%s:%d", name, w.tlsPort))
		}
	}
	entries = append(entries, extra...)
	rules, err := allow.Parse(entries)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Rules:         rules,
		Resolver:      resolverFunc(w.lookup),
		Dial:          w.dial,
		TestUpstreams: []netip.Prefix{netip.MustParsePrefix(upstreamAddr + "/32")},
		Limits:        lim,
		Secret:        secret,
	}
	var p *Proxy
	if secret != "" {
		ln, lerr := net.Listen("tcp", "127.0.0.1:0")
		if lerr != nil {
			t.Fatal(lerr)
		}
		w.addr = ln.Addr().String()
		p, err = Serve(t.Context(), cfg, ln)
	} else {
		w.sock = filepath.Join(t.TempDir(), "proxy.sock")
		p, err = Listen(t.Context(), cfg, w.sock)
	}
	if err != nil {
		t.Fatal(err)
	}
	w.proxy = p
	t.Cleanup(func() { p.Close() })
	return w
}

type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

func (w *world) lookup(_ context.Context, _, host string) ([]netip.Addr, error) {
	w.lookups.Add(1)
	name, ok := strings.CutSuffix(host, ".")
	if !ok {
		w.t.Errorf("the proxy looked up %q, not a rooted name", host)
	}
	addrs, ok := w.names[name]
	if !ok {
		w.t.Errorf("the proxy looked up %q, which no test names", host)
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// dial fails the test on any address outside this machine's loopback,
// even when the code under test is broken.
func (w *world) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !(netip.MustParsePrefix("127.0.0.0/8").Contains(ap.Addr()) || ap.Addr() == netip.IPv6Loopback()) {
		w.t.Errorf("the proxy dialled %s %q, outside loopback", network, addr)
		return nil, fmt.Errorf("test dialer: %q is outside loopback", addr)
	}
	w.dials.Add(1)
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (w *world) dialProxy() net.Conn {
	network, addr := "unix", w.sock
	if w.addr != "" {
		network, addr = "tcp", w.addr
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

func (w *world) client() *http.Client {
	if w.addr != "" {
		// As a command's tools take it from HTTP_PROXY: the URL with the
		// credentials, sent as Proxy-Authorization on CONNECT and plain
		// requests alike.
		u, err := url.Parse(ProxyURL(w.addr, w.secret))
		if err != nil {
			w.t.Fatal(err)
		}
		return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u),
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress.proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", w.sock)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the canary's certificate names no .test host; the proxy is under test
	}}
}

// decisions closes the proxy (so every connection is recorded) and
// returns its record.
func (w *world) decisions() []Decision {
	w.proxy.Close()
	return w.proxy.Decisions()
}

// decisionsFor is the decisions about host, in the order they were recorded.
func decisionsFor(ds []Decision, host string) []Decision {
	return slices.DeleteFunc(slices.Clone(ds), func(d Decision) bool { return d.Host != host })
}

func get(t *testing.T, c *http.Client, u string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestAllowedNameReachable(t *testing.T) {
	w := newWorld(t, Limits{})
	c := w.client()
	for _, u := range []string{
		fmt.Sprintf("https://tls.test:%d/", w.tlsPort),
		fmt.Sprintf("http://plain.test:%d/", w.plainPort),
		fmt.Sprintf("http://plain.test:%d/again", w.plainPort), // keep-alive: judged again
	} {
		code, body, err := get(t, c, u)
		if err != nil || code != 200 || !strings.HasPrefix(body, "canary ") {
			t.Errorf("GET %s through the proxy: %d %q %v; want the canary", u, code, body, err)
		}
	}
	ds := w.decisions()
	if len(ds) != 3 {
		t.Fatalf("decisions %+v, want 3", ds)
	}
	for _, d := range ds {
		if !d.Allowed || d.Rule == "" || !strings.HasPrefix(d.Addr, upstreamAddr+":") || d.BytesDown == 0 || d.BytesUp == 0 {
			t.Errorf("decision %+v: want allowed with rule, pinned address and bytes", d)
		}
	}
	// A tunnel is recorded when it ends (here at Close), a plain request
	// when its answer is sent: their order is not fixed.
	connects := 0
	for _, d := range ds {
		if d.Method == "CONNECT" && d.Host == "tls.test" {
			connects++
		}
	}
	if connects != 1 {
		t.Errorf("decisions %+v, want one CONNECT tls.test", ds)
	}
}

func TestPlainRequestHeadersRelayed(t *testing.T) {
	w := newWorld(t, Limits{})
	c := w.dialProxy()
	fmt.Fprintf(c, "GET http://PLAIN.test:%d/ HTTP/1.1\r\nHost: plain.test:%d\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: close\r\n\r\n", w.plainPort, w.plainPort)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	want := fmt.Sprintf("canary plain.test:%d ", w.plainPort)
	if resp.StatusCode != 200 || string(b) != want {
		t.Errorf("got %d %q, want 200 %q (Host canonical, Proxy-Authorization stripped)", resp.StatusCode, b, want)
	}
}

// refusal is one request that must be refused before anything is dialled.
type refusal struct {
	name   string
	send   func(w *world) string // the raw request
	reason string                // in the decision and the 403
}

func TestRefusedBeforeDial(t *testing.T) {
	own := ownNonLoopback(t)
	cases := []refusal{
		{"name not on the list", func(w *world) string {
			return "CONNECT pkgs.invalid:443 HTTP/1.1\r\nHost: pkgs.invalid:443\r\n\r\n"
		}, "not on the network allow-list"},
		{"plain name not on the list", func(w *world) string {
			return "GET http://pkgs.invalid/ HTTP/1.1\r\nHost: pkgs.invalid\r\n\r\n"
		}, "not on the network allow-list"},
		{"allowed name, other port", func(w *world) string {
			return "CONNECT tls.test:8443 HTTP/1.1\r\n\r\n"
		}, "not on the network allow-list"},
		{"IPv4 literal", func(w *world) string {
			return fmt.Sprintf("CONNECT %s:%d HTTP/1.1\r\n\r\n", upstreamAddr, w.tlsPort)
		}, "IP address"},
		{"metadata literal, plain", func(w *world) string {
			return "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n"
		}, "IP address"},
		{"IPv6 literal", func(w *world) string {
			return fmt.Sprintf("CONNECT [::1]:%d HTTP/1.1\r\n\r\n", w.tlsPort)
		}, "IP address"},
		{"numeric name", func(w *world) string {
			return fmt.Sprintf("CONNECT 127.1:%d HTTP/1.1\r\n\r\n", w.tlsPort)
		}, "number"},
		{"resolves to 127.0.0.1", connectTo("loop.test"), "loopback"},
		{"resolves to metadata", connectTo("meta.test"), "link-local"},
		{"resolves to private", connectTo("private.test"), "private"},
		{"resolves to CGNAT", connectTo("cgnat.test"), "carrier-grade"},
		{"resolves to IPv4-mapped", connectTo("mapped.test"), "IPv4-mapped"},
		{"resolves to IPv6 link-local", connectTo("v6local.test"), "link-local"},
		{"resolves to unique local", connectTo("ula.test"), "private"},
		{"resolves to multicast", connectTo("multicast.test"), "multicast"},
		{"one of its addresses private", connectTo("mixed.test"), "private"},
		{"resolves to the host's own address", connectTo("own.test"), "own addresses"},
		{"plain name resolving to metadata", func(w *world) string {
			return fmt.Sprintf("GET http://meta.test:%d/ HTTP/1.1\r\nHost: meta.test:%d\r\n\r\n", w.plainPort, w.plainPort)
		}, "link-local"},
		{"Host header differs", func(w *world) string {
			return fmt.Sprintf("GET http://plain.test:%d/ HTTP/1.1\r\nHost: evil.invalid\r\n\r\n", w.plainPort)
		}, "differs"},
		{"Host header differs in port", func(w *world) string {
			return fmt.Sprintf("GET http://plain.test:%d/ HTTP/1.1\r\nHost: plain.test\r\n\r\n", w.plainPort)
		}, "differs"},
		{"two Host headers", func(w *world) string {
			return fmt.Sprintf("GET http://plain.test:%d/ HTTP/1.1\r\nHost: plain.test:%d\r\nHost: evil.invalid\r\n\r\n", w.plainPort, w.plainPort)
		}, "Host"},
		{"CONNECT Host header differs", func(w *world) string {
			return fmt.Sprintf("CONNECT tls.test:%d HTTP/1.1\r\nHost: evil.invalid:443\r\n\r\n", w.tlsPort)
		}, "differs"},
		{"origin-form request", func(w *world) string {
			return "GET / HTTP/1.1\r\nHost: plain.test\r\n\r\n"
		}, "not a proxy request"},
		{"https in absolute form", func(w *world) string {
			return fmt.Sprintf("GET https://tls.test:%d/ HTTP/1.1\r\n\r\n", w.tlsPort)
		}, "CONNECT"},
		{"credentials in the URL", func(w *world) string {
			return fmt.Sprintf("GET http://u:p@plain.test:%d/ HTTP/1.1\r\n\r\n", w.plainPort)
		}, "credentials"},
		{"folded header", func(w *world) string {
			return fmt.Sprintf("GET http://plain.test:%d/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", w.plainPort)
		}, "malformed"},
		{"bare CR", func(w *world) string {
			return fmt.Sprintf("GET http://plain.test:%d/ HTTP/1.1\r\nX: a\rHost: evil.invalid\r\n\r\n", w.plainPort)
		}, "malformed"},
		{"head too large", func(w *world) string {
			return fmt.Sprintf("GET http://plain.test:%d/ HTTP/1.1\r\nX: %s\r\n\r\n", w.plainPort, strings.Repeat("a", 20<<10))
		}, "larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, Limits{})
			if !own.IsValid() && strings.Contains(tc.name, "own") {
				t.Skip("this host has no address besides loopback; the own-address rule is covered by TestAddrRefused")
			}
			w.refused(tc)
		})
	}
}

func connectTo(name string) func(w *world) string {
	return func(w *world) string {
		return fmt.Sprintf("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n", name, w.tlsPort, name, w.tlsPort)
	}
}

// refused sends tc's request and checks the 403, the decision and that
// nothing was dialled.
func (w *world) refused(tc refusal) {
	t := w.t
	c := w.dialProxy()
	if _, err := io.WriteString(c, tc.send(w)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the proxy's answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), tc.reason) ||
		!strings.Contains(string(body), "refused") {
		t.Errorf("answer %d %q, want 403 saying %q", resp.StatusCode, body, tc.reason)
	}
	ds := w.decisions()
	if len(ds) != 1 || ds[0].Allowed || !strings.Contains(ds[0].Reason, tc.reason) {
		t.Errorf("decisions %+v, want one refusal saying %q", ds, tc.reason)
	}
	if n := w.dials.Load(); n != 0 {
		t.Errorf("the proxy dialled %d times for a refused request", n)
	}
}

func ownNonLoopback(t testing.TB) netip.Addr {
	own, err := ownAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range own {
		if !a.IsLoopback() && !a.IsLinkLocalUnicast() {
			return a
		}
	}
	return netip.Addr{}
}

// tunnel opens a CONNECT tunnel to name on the TLS canary and returns the
// connection after the proxy's 200.
func (w *world) tunnel(name string) (net.Conn, *bufio.Reader) {
	c := w.dialProxy()
	fmt.Fprintf(c, "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n", name, w.tlsPort, name, w.tlsPort)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		w.t.Fatalf("CONNECT %s: %v %v", name, resp, err)
	}
	return c, br
}

func TestServerNameChecked(t *testing.T) {
	for _, sni := range []string{"evil.invalid", "other.test", ""} {
		t.Run("sni "+sni, func(t *testing.T) {
			w := newWorld(t, Limits{})
			c, _ := w.tunnel("tls.test")
			err := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake()
			if err == nil {
				t.Fatal("TLS handshake through a tunnel with another server name succeeded")
			}
			ds := w.decisions()
			want := "differs from the CONNECT host"
			if sni == "" {
				want = "without a server name"
			}
			if len(ds) != 1 || ds[0].Allowed || !strings.Contains(ds[0].Reason, want) {
				t.Errorf("decisions %+v, want a refusal saying %q", ds, want)
			}
			if w.dials.Load() != 0 {
				t.Error("the proxy dialled for a refused server name")
			}
		})
	}
}

func TestRequestRelayedInsideTunnel(t *testing.T) {
	for _, inner := range []string{
		"CONNECT evil.invalid:443 HTTP/1.1\r\nHost: evil.invalid:443\r\n\r\n",
		"GET http://evil.invalid/ HTTP/1.1\r\nHost: evil.invalid\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: tls.test\r\n\r\n",
	} {
		t.Run(strings.Fields(inner)[0], func(t *testing.T) {
			w := newWorld(t, Limits{})
			c, br := w.tunnel("tls.test")
			io.WriteString(c, inner)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer in the tunnel: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 403 || !strings.Contains(string(body), "did not start with TLS") {
				t.Errorf("answer %d %q, want 403: not TLS", resp.StatusCode, body)
			}
			if w.dials.Load() != 0 {
				t.Error("the proxy dialled for a tunnel that did not start with TLS")
			}
		})
	}
}

func TestKeepAliveJudgesEveryRequest(t *testing.T) {
	w := newWorld(t, Limits{})
	c := w.dialProxy()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET http://plain.test:%d/ HTTP/1.1\r\nHost: plain.test:%d\r\n\r\n", w.plainPort, w.plainPort)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	fmt.Fprintf(c, "GET http://plain.test:%d/ HTTP/1.1\r\nHost: evil.invalid\r\n\r\n", w.plainPort)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("second request, Host differing on a kept-alive connection: %v %v, want 403", resp, err)
	}
	ds := w.decisions()
	if len(ds) != 2 || !ds[0].Allowed || ds[1].Allowed {
		t.Errorf("decisions %+v, want allowed then refused", ds)
	}
}

func TestByteBound(t *testing.T) {
	const bound = 1 << 20
	w := newWorld(t, Limits{MaxBytes: bound})
	c := w.client()
	_, body, err := get(t, c, fmt.Sprintf("https://tls.test:%d/?bytes=%d", w.tlsPort, 4*bound))
	if err == nil && len(body) == 4*bound {
		t.Fatal("a download past the byte bound went through")
	}
	code, body, err := get(t, c, fmt.Sprintf("http://plain.test:%d/", w.plainPort))
	if err != nil || code != 403 || !strings.Contains(body, "byte bound") {
		t.Errorf("after the bound: %d %q %v, want 403 byte bound", code, body, err)
	}
	// A connection is recorded when it ends: the cut tunnel's record may
	// come after the refusal the client saw next, so each is found by host.
	ds := w.decisions()
	cut, refused := decisionsFor(ds, "tls.test"), decisionsFor(ds, "plain.test")
	if len(ds) != 2 || len(cut) != 1 || len(refused) != 1 ||
		!strings.Contains(cut[0].Cut, "byte bound") || cut[0].BytesDown > bound || refused[0].Allowed {
		t.Errorf("decisions %+v, want the download cut at the byte bound and the next request refused", ds)
	}
}

func TestConnectionBound(t *testing.T) {
	w := newWorld(t, Limits{MaxConns: 2})
	c := w.client()
	c.Transport.(*http.Transport).DisableKeepAlives = true
	for i := range 3 {
		code, body, err := get(t, c, fmt.Sprintf("http://plain.test:%d/", w.plainPort))
		if i < 2 && (err != nil || code != 200) {
			t.Errorf("request %d: %d %v, want 200", i, code, err)
		}
		if i == 2 && (code != 403 || !strings.Contains(body, "connection bound")) {
			t.Errorf("request %d: %d %q %v, want 403 connection bound", i, code, body, err)
		}
	}
	if n := w.dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2", n)
	}
}

func TestConcurrentBound(t *testing.T) {
	w := newWorld(t, Limits{MaxConcurrent: 1})
	w.dialProxy() // holds the one slot
	time.Sleep(100 * time.Millisecond)
	w.refused(refusal{send: connectTo("tls.test"), reason: "at once"})
}

func TestLargeTransfer(t *testing.T) {
	const size = 50 << 20
	w := newWorld(t, Limits{})
	for _, u := range []string{
		fmt.Sprintf("https://tls.test:%d/?bytes=%d", w.tlsPort, size),
		fmt.Sprintf("http://plain.test:%d/?bytes=%d", w.plainPort, size),
	} {
		resp, err := w.client().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size {
			t.Fatalf("50 MB through the proxy from %s: %d bytes, %v", u, n, err)
		}
	}
	ds := w.decisions()
	if len(ds) != 2 || ds[0].BytesDown < size || ds[1].BytesDown < size || ds[0].Cut != "" || ds[1].Cut != "" {
		t.Errorf("decisions %+v", ds)
	}
}

func TestResolverErrorNamesNoServer(t *testing.T) {
	w := newWorld(t, Limits{})
	w.names["gone.test"] = nil // resolves to nothing
	w.proxy.Close()
	rules, _ := allow.Parse([]string{"gone.test", "broken.test"})
	p, err := Listen(t.Context(), Config{
		Rules: rules,
		Resolver: resolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
			if host == "broken.test." {
				return nil, &net.DNSError{Err: "server misbehaving", Name: host, Server: "10.9.8.7:53"}
			}
			return nil, nil
		}),
		Dial: w.dial,
	}, w.sock+"2")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	w.proxy, w.sock = p, w.sock+"2"
	for name, want := range map[string]string{"gone.test": "resolves to no address", "broken.test": "cannot resolve: server misbehaving"} {
		c := w.dialProxy()
		fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\n\r\n", name)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 403 || !strings.Contains(string(body), want) || strings.Contains(string(body), "10.9.8.7") {
			t.Errorf("%s: %d %q, want 403 %q naming no DNS server", name, resp.StatusCode, body, want)
		}
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	w := newWorld(t, Limits{})
	c, _ := w.tunnel("tls.test")
	tc := tls.Client(c, &tls.Config{ServerName: "tls.test", InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := tc.Read(make([]byte, 1)); done <- err }()
	var once sync.Once
	once.Do(func() { w.proxy.Close() })
	select {
	case err := <-done:
		if err == nil {
			t.Error("read after Close succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close left a tunnel open")
	}
	if ds := w.proxy.Decisions(); len(ds) != 1 || !ds[0].Allowed || ds[0].Cut != "" {
		t.Errorf("decisions %+v, want the tunnel recorded, not cut", ds)
	}
}

func TestSocketMode(t *testing.T) {
	w := newWorld(t, Limits{})
	if _, err := Listen(t.Context(), Config{}, w.sock); err == nil {
		t.Error("Listen on an existing socket succeeded")
	}
	fi, err := os.Stat(w.sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v %v, want 0600", fi, err)
	}
}

func TestDurationBound(t *testing.T) {
	w := newWorld(t, Limits{MaxDuration: 2 * time.Second})
	c, _ := w.tunnel("tls.test")
	tc := tls.Client(c, &tls.Config{ServerName: "tls.test", InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Read(make([]byte, 1)); err == nil {
		t.Fatal("a read in a tunnel past MaxDuration succeeded")
	}
	// The listener is closed beside the tunnels, maybe a moment later.
	for i := 0; ; i++ {
		c, err := net.Dial("unix", w.sock)
		if err != nil {
			break
		}
		c.Close()
		if i == 50 {
			t.Error("the proxy still accepts connections past MaxDuration")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ds := w.decisions()
	if len(ds) != 1 || !strings.Contains(ds[0].Cut, "network time") {
		t.Errorf("decisions %+v, want the tunnel cut: network time", ds)
	}
}

func TestDecisionsBounded(t *testing.T) {
	p := &Proxy{}
	for i := range maxDecisions + 5 {
		p.record(Decision{Port: i})
	}
	if n := len(p.Decisions()); n != maxDecisions || p.Dropped() != 5 {
		t.Errorf("%d decisions kept, %d dropped; want %d and 5", n, p.Dropped(), maxDecisions)
	}
}

// TestSettleRecordsTheLastConnection: a tunnel is recorded when it ends;
// Settle waits for a connection the client just closed, so a run reading
// its decisions after its command ended sees it (without Close).
func TestSettleRecordsTheLastConnection(t *testing.T) {
	w := newWorld(t, Limits{})
	c, _ := w.tunnel("tls.test")
	tc := tls.Client(c, &tls.Config{ServerName: "tls.test", InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	held, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	w.proxy.Settle(held) // the tunnel is open: Settle gives up at the bound
	cancel()
	if ds := w.proxy.Decisions(); len(ds) != 0 {
		t.Fatalf("decisions %+v while the tunnel is open, want none", ds)
	}
	tc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	w.proxy.Settle(ctx)
	if ds := w.proxy.Decisions(); len(ds) != 1 || !ds[0].Allowed {
		t.Errorf("decisions %+v after the client closed, want the tunnel recorded", ds)
	}
}
