package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
)

// theToken is the real value in these tests: it must reach the upstream
// on bound requests and nothing else.
const theToken = "ghp_REALsecretVALUEnotForTheSandbox0123456"

// brokerWorld is a proxy brokering GH_TOKEN to api.test (a TLS upstream
// with a certificate from a test root), beside an unbrokered TLS host
// plain.test... all on loopback, names from a test resolver, the dialer
// failing the test on anything else.
type brokerWorld struct {
	*world
	api      *httptest.Server
	apiPort  int
	ph       string
	mu       sync.Mutex
	seen     []string // "METHOD authorization" as the upstream saw each request
	proxyCA  *x509.CertPool
	upstream *x509.Certificate
}

func newBrokerWorld(t testing.TB, roots func(upstreamCA []byte) *x509.CertPool) *brokerWorld {
	t.Helper()
	bw := &brokerWorld{world: &world{t: t}}
	w := bw.world
	upCA, err := newBrokerCA([]string{"api.test"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bw.api = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		bw.mu.Lock()
		bw.seen = append(bw.seen, r.Method+" "+auth)
		bw.mu.Unlock()
		switch r.URL.Path {
		case "/bytes":
			canary(rw, r)
		case "/echo": // an upstream that reflects the credential it got
			rw.Header().Set("X-Echo", auth)
			fmt.Fprintf(rw, "you sent %q", auth)
		case "/malformed": // a response whose parse error quotes the value
			conn, bw2, _ := rw.(http.Hijacker).Hijack()
			defer conn.Close()
			fmt.Fprintf(bw2, "HTTP/1.1 %s OK\r\nContent-Length: 0\r\n\r\n", strings.TrimPrefix(auth, "Bearer "))
			bw2.Flush()
		case "/gzip":
			rw.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(rw)
			fmt.Fprintf(zw, "you sent %q", auth)
			zw.Close()
		default:
			fmt.Fprintf(rw, "api %s", r.Method)
		}
	}))
	bw.api.Listener = listenUpstream(t)
	bw.api.TLS = &tls.Config{Certificates: []tls.Certificate{*upCA.leaves["api.test"]}}
	bw.api.Config.ErrorLog = log.New(io.Discard, "", 0)
	bw.api.StartTLS()
	t.Cleanup(bw.api.Close)
	bw.apiPort = portOf(bw.api)
	w.tls = httptest.NewUnstartedServer(http.HandlerFunc(canary))
	w.tls.Listener = listenUpstream(t)
	w.tls.Config.ErrorLog = log.New(io.Discard, "", 0)
	w.tls.StartTLS()
	t.Cleanup(w.tls.Close)
	w.tlsPort = portOf(w.tls)
	bw.upstream = w.tls.Certificate()

	up := netip.MustParseAddr(upstreamAddr)
	w.names = map[string][]netip.Addr{"api.test": {up}, "tls.test": {up}}
	rules, err := allow.Parse([]string{fmt.Sprintf("api.test:%d", bw.apiPort), fmt.Sprintf("tls.test:%d", w.tlsPort), "api.test:80"})
	if err != nil {
		t.Fatal(err)
	}
	bw.ph, err = NewPlaceholder(theToken)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(upCA.certPEM)
	if roots != nil {
		pool = roots(upCA.certPEM)
	}
	w.sock = filepath.Join(t.TempDir(), "proxy.sock")
	p, err := Listen(t.Context(), Config{
		Rules:         rules,
		Resolver:      resolverFunc(w.lookup),
		Dial:          w.dial,
		TestUpstreams: []netip.Prefix{netip.MustParsePrefix(upstreamAddr + "/32")},
		Brokers:       []Broker{{Name: "GH_TOKEN", Value: theToken, Placeholder: bw.ph, Hosts: []string{"API.test"}, Methods: []string{"GET", "head"}}},
		BrokerRoots:   pool,
	}, w.sock)
	if err != nil {
		t.Fatal(err)
	}
	w.proxy = p
	t.Cleanup(func() { p.Close() })
	bw.proxyCA = x509.NewCertPool()
	if !bw.proxyCA.AppendCertsFromPEM(p.BrokerCA()) {
		t.Fatalf("BrokerCA %q is no PEM certificate", p.BrokerCA())
	}
	return bw
}

// sandboxClient is a client as the sandbox has one: the proxy, and the
// trust bundle holding the run's CA. alpn nil: HTTP/1.1.
func (bw *brokerWorld) sandboxClient(alpn []string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress.proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", bw.sock)
		},
		TLSClientConfig: &tls.Config{RootCAs: bw.proxyCA, NextProtos: alpn},
	}}
}

func (bw *brokerWorld) do(c *http.Client, method, path string, hd http.Header) (int, string, http.Header, error) {
	req, err := http.NewRequest(method, fmt.Sprintf("https://api.test:%d%s", bw.apiPort, path), strings.NewReader(""))
	if err != nil {
		bw.t.Fatal(err)
	}
	if method == "GET" || method == "HEAD" {
		req.Body = nil
	}
	req.Header = hd
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, err
}

func (bw *brokerWorld) upstreamSaw() []string {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	return append([]string(nil), bw.seen...)
}

// noTokenIn fails the test when the real value is in the decisions.
func (bw *brokerWorld) noTokenInDecisions() []Decision {
	ds := bw.decisions()
	js, _ := json.Marshal(ds)
	if bytes.Contains(js, []byte(theToken)) {
		bw.t.Errorf("the decisions hold the real value: %s", js)
	}
	return ds
}

func TestBrokerPutsValueOnBoundMethods(t *testing.T) {
	bw := newBrokerWorld(t, nil)
	c := bw.sandboxClient(nil)
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	cases := []struct {
		method, auth, upstreamWants string
	}{
		{"GET", "Bearer " + bw.ph, "Bearer " + theToken},
		{"GET", "token " + bw.ph, "token " + theToken},
		{"HEAD", "Bearer " + bw.ph, "Bearer " + theToken},
		{"GET", basic("x-access-token", bw.ph), basic("x-access-token", theToken)},
		{"GET", "bAsIc " + base64.StdEncoding.EncodeToString([]byte(bw.ph+":x-oauth-basic")), "bAsIc " + base64.StdEncoding.EncodeToString([]byte(theToken+":x-oauth-basic"))},
		{"GET", "Bearer other", "Bearer other"}, // no placeholder: as sent
	}
	for _, tc := range cases {
		code, _, _, err := bw.do(c, tc.method, "/", http.Header{"Authorization": {tc.auth}})
		if err != nil || code != 200 {
			t.Errorf("%s with %q: %d %v, want 200", tc.method, tc.auth, code, err)
		}
	}
	saw := bw.upstreamSaw()
	if len(saw) != len(cases) {
		t.Fatalf("the upstream saw %q, want %d requests", saw, len(cases))
	}
	for i, tc := range cases {
		if want := tc.method + " " + tc.upstreamWants; saw[i] != want {
			t.Errorf("the upstream saw %q, want %q", saw[i], want)
		}
	}
	ds := bw.noTokenInDecisions()
	brokered := 0
	for _, d := range ds {
		if d.Brokered == "GH_TOKEN" && d.Allowed && d.Method != "CONNECT" {
			brokered++
		}
	}
	if brokered != len(cases)-1 {
		t.Errorf("decisions %+v, want %d requests saying brokered GH_TOKEN", ds, len(cases)-1)
	}
}

func TestBrokerMasksValueInResponses(t *testing.T) {
	bw := newBrokerWorld(t, nil)
	c := bw.sandboxClient(nil)
	code, body, hd, err := bw.do(c, "GET", "/echo", http.Header{"Authorization": {"Bearer " + bw.ph}})
	if err != nil || code != 200 {
		t.Fatalf("GET /echo: %d %v", code, err)
	}
	if strings.Contains(body, theToken) || strings.Contains(hd.Get("X-Echo"), theToken) {
		t.Errorf("the sandbox got the real value back: body %q, X-Echo %q", body, hd.Get("X-Echo"))
	}
	if want := fmt.Sprintf("you sent %q", "Bearer "+bw.ph); body != want {
		t.Errorf("body %q, want the value masked by the placeholder: %q", body, want)
	}
	if saw := bw.upstreamSaw(); len(saw) != 1 || saw[0] != "GET Bearer "+theToken {
		t.Errorf("the upstream saw %q, want the real value", saw)
	}
	// An upstream's error quoting the value reaches neither the sandbox
	// nor the record (checked below).
	code, body, _, err = bw.do(c, "GET", "/malformed", http.Header{"Authorization": {"Bearer " + bw.ph}})
	if err != nil || code != http.StatusBadGateway || strings.Contains(body, theToken) || !strings.Contains(body, "malformed") {
		t.Errorf("GET /malformed: %d %q %v, want 502 with the value masked", code, body, err)
	}
	// A compressed answer could hide the value: refused.
	code, body, _, err = bw.do(c, "GET", "/gzip", http.Header{"Authorization": {"Bearer " + bw.ph}, "Accept-Encoding": {"gzip"}})
	if err != nil || code != http.StatusBadGateway || strings.Contains(body, theToken) {
		t.Errorf("GET /gzip: %d %q %v, want 502 (compressed answer to a brokered request)", code, body, err)
	}
	bw.noTokenInDecisions()
}

func TestBrokerRefusesUnboundMethod(t *testing.T) {
	bw := newBrokerWorld(t, nil)
	c := bw.sandboxClient(nil)
	for _, m := range []string{"POST", "DELETE", "PATCH"} {
		code, body, _, err := bw.do(c, m, "/", http.Header{"Authorization": {"Bearer " + bw.ph}})
		if err != nil || code != http.StatusForbidden || !strings.Contains(body, "brokered GH_TOKEN is bound to GET, HEAD only") {
			t.Errorf("%s with the placeholder: %d %q %v, want 403 naming the bound methods", m, code, body, err)
		}
	}
	if saw := bw.upstreamSaw(); len(saw) != 0 {
		t.Errorf("the upstream saw %q, want nothing", saw)
	}
	// Without the placeholder a POST carries no secret: relayed as sent.
	code, _, _, err := bw.do(c, "POST", "/", http.Header{})
	if err != nil || code != 200 {
		t.Errorf("POST without the placeholder: %d %v, want 200", code, err)
	}
	for _, s := range bw.upstreamSaw() {
		if strings.Contains(s, theToken) {
			t.Errorf("the upstream saw %q", s)
		}
	}
	bw.noTokenInDecisions()
}

func TestBrokerPlainHTTPRefused(t *testing.T) {
	bw := newBrokerWorld(t, nil)
	bw.refused(refusal{send: func(*world) string {
		return "GET http://api.test/ HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " + bw.ph + "\r\n\r\n"
	}, reason: "HTTPS only"})
}

func TestBrokerInnerRequestJudged(t *testing.T) {
	for _, tc := range []struct{ name, req, reason string }{
		{"Host differs", "GET / HTTP/1.1\r\nHost: evil.invalid\r\n\r\n", "differs"},
		{"two Host headers", "GET / HTTP/1.1\r\nHost: api.test:%d\r\nHost: evil.invalid\r\n\r\n", "Host"},
		{"absolute form", "GET https://evil.invalid/ HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", "origin form"},
		{"CONNECT", "CONNECT evil.invalid:443 HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", "CONNECT"},
		{"bare CR", "GET / HTTP/1.1\r\nHost: api.test:%d\r\nX: a\rAuthorization: x\r\n\r\n", "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bw := newBrokerWorld(t, nil)
			c := bw.dialProxy()
			fmt.Fprintf(c, "CONNECT api.test:%d HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", bw.apiPort, bw.apiPort)
			br := bufio.NewReader(c)
			if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %v %v", resp, err)
			}
			tc2 := tls.Client(&helloConn{Conn: c, r: br}, &tls.Config{ServerName: "api.test", RootCAs: bw.proxyCA})
			req := tc.req
			if strings.Contains(req, "%d") {
				req = fmt.Sprintf(req, bw.apiPort)
			}
			io.WriteString(tc2, req)
			resp, err := http.ReadResponse(bufio.NewReader(tc2), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 403 || !strings.Contains(string(body), tc.reason) {
				t.Errorf("answer %d %q, want 403 saying %q", resp.StatusCode, body, tc.reason)
			}
			if saw := bw.upstreamSaw(); len(saw) != 0 {
				t.Errorf("the upstream saw %q", saw)
			}
		})
	}
}

func TestBrokerUpstreamVerified(t *testing.T) {
	// The proxy trusts only another root: the upstream's certificate fails.
	bw := newBrokerWorld(t, func([]byte) *x509.CertPool { return x509.NewCertPool() })
	code, body, _, err := bw.do(bw.sandboxClient(nil), "GET", "/", http.Header{"Authorization": {"Bearer " + bw.ph}})
	if err != nil || code != http.StatusForbidden || !strings.Contains(body, "TLS to the upstream failed") {
		t.Errorf("GET with an unverifiable upstream: %d %q %v, want 403 naming TLS", code, body, err)
	}
	if saw := bw.upstreamSaw(); len(saw) != 0 {
		t.Errorf("the upstream saw %q through unverified TLS", saw)
	}
}

func TestBrokerHTTP11Only(t *testing.T) {
	bw := newBrokerWorld(t, nil)
	c := bw.dialProxy()
	fmt.Fprintf(c, "CONNECT api.test:%d HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", bw.apiPort, bw.apiPort)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	err := tls.Client(&helloConn{Conn: c, r: br}, &tls.Config{ServerName: "api.test", RootCAs: bw.proxyCA, NextProtos: []string{"h2"}}).Handshake()
	if err == nil {
		t.Error("a client offering only h2 finished its handshake with the broker")
	}
}

func TestUnbrokeredHostNotIntercepted(t *testing.T) {
	bw := newBrokerWorld(t, nil)
	var got *x509.Certificate
	c := bw.sandboxClient(nil)
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{
		InsecureSkipVerify: true, // checked below: the certificate must be the upstream's own
		VerifyConnection: func(cs tls.ConnectionState) error {
			got = cs.PeerCertificates[0]
			return nil
		},
	}
	code, body, err := get(t, c, fmt.Sprintf("https://tls.test:%d/", bw.tlsPort))
	if err != nil || code != 200 || !strings.HasPrefix(body, "canary") {
		t.Fatalf("GET tls.test: %d %q %v", code, body, err)
	}
	if got == nil || !got.Equal(bw.upstream) {
		t.Error("the unbrokered host's tunnel showed a certificate other than the upstream's: intercepted")
	}
	for _, d := range bw.noTokenInDecisions() {
		if d.Brokered != "" {
			t.Errorf("decision %+v says brokered", d)
		}
	}
}

func TestBrokerCAConstrained(t *testing.T) {
	ca, err := newBrokerCA([]string{"api.test"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	block := ca.leaves["api.test"].Certificate
	caCert, _ := x509.ParseCertificate(block[1])
	if !caCert.PermittedDNSDomainsCritical || len(caCert.PermittedDNSDomains) != 1 || caCert.PermittedDNSDomains[0] != "api.test" {
		t.Errorf("CA constraints %v, want api.test only", caCert.PermittedDNSDomains)
	}
	// A leaf for another name, signed by this CA, fails verification.
	other, err := newBrokerCA([]string{"evil.test"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	leaf, _ := x509.ParseCertificate(other.leaves["evil.test"].Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "evil.test"}); err == nil {
		t.Error("a foreign leaf verified against the run's CA")
	}
	good, _ := x509.ParseCertificate(block[0])
	if _, err := good.Verify(x509.VerifyOptions{Roots: pool, DNSName: "api.test"}); err != nil {
		t.Errorf("the run's own leaf: %v", err)
	}
}

func TestCheckBrokers(t *testing.T) {
	rules, err := allow.Parse([]string{"api.test", "files.test:8443"})
	if err != nil {
		t.Fatal(err)
	}
	ph, _ := NewPlaceholder(theToken)
	ok := func() Broker {
		return Broker{Name: "GH_TOKEN", Value: theToken, Placeholder: ph, Hosts: []string{"api.test"}, Methods: []string{"GET"}}
	}
	for _, tc := range []struct {
		name string
		edit func(*Broker)
		want string
	}{
		{"valid", func(*Broker) {}, ""},
		{"host on another port of the list", func(b *Broker) { b.Hosts = []string{"files.test"} }, ""},
		{"host not on the list", func(b *Broker) { b.Hosts = []string{"evil.test"} }, "not on the network allow-list"},
		{"wildcard host", func(b *Broker) { b.Hosts = []string{"*.test"} }, "not a name"},
		{"no value", func(b *Broker) { b.Value = "" }, "empty value"},
		{"newline in value", func(b *Broker) { b.Value = "a\r\nX: y" }, "control"},
		{"foreign placeholder", func(b *Broker) { b.Placeholder = "xyz" }, "placeholder"},
		{"placeholder is the value", func(b *Broker) { b.Value = ph + "x" }, "overlap"},
		{"no method", func(b *Broker) { b.Methods = nil }, "no method"},
		{"CONNECT", func(b *Broker) { b.Methods = []string{"connect"} }, "method"},
		{"method with space", func(b *Broker) { b.Methods = []string{"GET X"} }, "method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ok()
			tc.edit(&b)
			err := checkBrokers([]Broker{b}, rules)
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkBrokers: %v, want %q", err, tc.want)
			}
		})
	}
	b1, b2 := ok(), ok()
	b2.Name = "OTHER"
	if err := checkBrokers([]Broker{b1, b2}, rules); err == nil || !strings.Contains(err.Error(), "bound to GH_TOKEN already") {
		t.Errorf("two secrets on one host: %v", err)
	}
}

func TestNewPlaceholder(t *testing.T) {
	a, err := NewPlaceholder(theToken)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPlaceholder(theToken)
	if a == b || len(a) != len(theToken) || !strings.HasPrefix(a, PlaceholderPrefix) {
		t.Errorf("placeholders %q %q: want fresh, prefixed, as long as the value", a, b)
	}
	if short, _ := NewPlaceholder("abc"); len(short) != len(PlaceholderPrefix)+placeholderRandom {
		t.Errorf("placeholder for a short value %q", short)
	}
}

func TestMaskReader(t *testing.T) {
	ph, _ := NewPlaceholder(theToken)
	p := &Proxy{cfg: Config{Brokers: []Broker{{Name: "GH_TOKEN", Value: theToken, Placeholder: ph}}}}
	in := "a" + theToken + "b" + theToken[:10] + "|" + theToken
	want := "a" + ph + "b" + theToken[:10] + "|" + ph
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"halves":   iotest.HalfReader(strings.NewReader(in)),
	} {
		got, err := io.ReadAll(&maskReader{r: io.NopCloser(r), p: p})
		if err != nil || string(got) != want {
			t.Errorf("%s: %q %v, want %q", name, got, err, want)
		}
	}
}

// BenchmarkBrokered50MB downloads 50 MB with the placeholder through a
// brokered tunnel (TLS ended and opened again, the body scanned for the
// value) and through a plain tunnel, alternately, and reports the ratio.
func BenchmarkBrokered50MB(b *testing.B) {
	const size = 50 << 20
	bw := newBrokerWorld(b, nil)
	brokered := bw.sandboxClient(nil)
	tunnel := bw.sandboxClient(nil)
	tunnel.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the canary's own certificate names no .test host
	viaBroker := fmt.Sprintf("https://api.test:%d/bytes?bytes=%d", bw.apiPort, size)
	viaTunnel := fmt.Sprintf("https://tls.test:%d/?bytes=%d", bw.tlsPort, size)
	var tBroker, tTunnel time.Duration
	for b.Loop() {
		tTunnel += fetch(b, tunnel, viaTunnel, size)
		tBroker += fetch(b, brokered, viaBroker, size)
	}
	b.ReportMetric(float64(tBroker)/float64(tTunnel), "brokered/tunnel")
	b.ReportMetric(float64(tBroker.Milliseconds())/float64(b.N), "ms-brokered/op")
	b.ReportMetric(float64(tTunnel.Milliseconds())/float64(b.N), "ms-tunnel/op")
}
