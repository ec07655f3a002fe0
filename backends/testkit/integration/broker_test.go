//go:build linux

package integration_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/internal/egresstest"
)

// brokerScript runs in the sandbox: it sends the GH_TOKEN it holds
// it with GET and POST to the brokered host, fetches the unbrokered host
// through a tunnel and prints the certificate it saw there, and tries to
// change the trust bundle; last its whole environment, hex-encoded.
const brokerScript = `
import hashlib, http.client, json, os, ssl, sys, urllib.request, urllib.error
api, other, port_other = sys.argv[1], sys.argv[2], int(sys.argv[3])
tok = os.environ.get("GH_TOKEN", "")
for method in ("GET", "POST"):
    req = urllib.request.Request(api + "/echo", method=method, headers={"Authorization": "Bearer " + tok},
                                 data=b"x" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            print("%s %d %s" % (method, r.status, r.read().decode().strip()))
    except urllib.error.HTTPError as e:
        print("%s %d %s" % (method, e.code, e.read().decode().strip()))
    except Exception as e:
        print("%s error %r" % (method, e))
proxy = os.environ["HTTPS_PROXY"].removeprefix("http://").split(":")
c = http.client.HTTPSConnection(proxy[0], int(proxy[1]), timeout=20, context=ssl._create_unverified_context())
c.set_tunnel(other, port_other)
try:
    c.request("GET", "/")
    r = c.getresponse()
    print("other %d %s %s" % (r.status, r.read().decode().strip(), hashlib.sha256(c.sock.getpeercert(True)).hexdigest()))
except Exception as e:
    print("other error %r" % (e,))
try:
    with open(os.environ["SSL_CERT_FILE"], "a") as f:
        f.write("x")
    print("bundle writable")
except OSError as e:
    print("bundle not writable %d" % e.errno)
# Hex, so that no output redaction hides what the environment holds.
print("envhex " + json.dumps(dict(os.environ)).encode().hex())
`

// selfSigned is a certificate for name that is its own root.
func selfSigned(t *testing.T, name string) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, cert
}

func tlsCanary(t *testing.T, name string, h http.Handler) (*httptest.Server, *x509.Certificate) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	cert, x := selfSigned(t, name)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, x
}

// TestBrokeredSecret (issue 36): on docker, oci and local, a GH_TOKEN brokered
// to a host reaches that host's upstream (a local TLS canary, verified
// against the test's root) on GET as the real value, while the sandbox's
// environment, its output, the outcome (--json) and the audit record hold
// only the placeholder; a POST with it is refused before the upstream
// sees it; an unbrokered allowed host is tunnelled, not intercepted; the
// trust bundle cannot be changed from inside.
func TestBrokeredSecret(t *testing.T) {
	const token = "ghp_integrationREALvalue0123456789abcdef"
	const apiName, otherName = "api.broker.test", "other.broker.test"
	var mu sync.Mutex
	var seen []string
	api, apiCert := tlsCanary(t, apiName, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprintf(w, "you sent %s", r.Header.Get("Authorization"))
	}))
	other, otherCert := tlsCanary(t, otherName, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "other-ok")
	}))
	apiAddr := netip.MustParseAddrPort(api.Listener.Addr().String())
	otherAddr := netip.MustParseAddrPort(other.Listener.Addr().String())
	roots := x509.NewCertPool()
	roots.AddCert(apiCert)
	hook := egresstest.Hook{
		Upstreams: []netip.Prefix{netip.PrefixFrom(apiAddr.Addr(), 32)},
		Resolver:  testResolver{apiName: apiAddr.Addr(), otherName: otherAddr.Addr()},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != apiAddr.String() && addr != otherAddr.String() {
				t.Errorf("the proxy dialled %s %s, not a canary", network, addr)
				return nil, fmt.Errorf("test dialer: %s is not a canary", addr)
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		Roots: roots,
	}
	ctx := egresstest.With(context.Background(), hook)
	t.Setenv("GH_TOKEN", token) // the value comes from triage-sandbox's own environment

	forEachBackend(t, func(t *testing.T, k *kit) {
		mu.Lock()
		seen = nil
		mu.Unlock()
		f := newFixture(t)
		f.cfg = withNetwork(t, f, fmt.Sprintf(`["%s:%d", "%s:%d"]`+"\n[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [%q]", apiName, apiAddr.Port(), otherName, otherAddr.Port(), apiName))
		p := k.build(t, f, "reproducer", currentHost(t, "GH_TOKEN="+token))
		out, text := k.runOutcomeCtx(t, ctx, p, "python3", "-c", brokerScript,
			fmt.Sprintf("https://%s:%d", apiName, apiAddr.Port()), otherName, strconv.Itoa(int(otherAddr.Port())))
		if out.ExitCode != 0 {
			t.Fatalf("exit %d: %s", out.ExitCode, text)
		}

		mu.Lock()
		got := append([]string(nil), seen...)
		mu.Unlock()
		if len(got) != 1 || got[0] != "GET Bearer "+token {
			t.Errorf("the upstream saw %q, want one GET with the real value (and no POST)", got)
		}
		env := map[string]string{}
		for _, line := range strings.Split(text, "\n") {
			if h, ok := strings.CutPrefix(line, "envhex "); ok {
				b, err := hex.DecodeString(strings.TrimSpace(h))
				if err == nil {
					err = json.Unmarshal(b, &env)
				}
				if err != nil {
					t.Fatalf("the environment printed inside: %v", err)
				}
			}
		}
		placeholder := env["GH_TOKEN"]
		for k, v := range env {
			if strings.Contains(v, token) {
				t.Errorf("the sandbox's %s holds the real value", k)
			}
		}
		if !strings.HasPrefix(placeholder, egress.PlaceholderPrefix) {
			t.Errorf("the sandbox's GH_TOKEN is %q, want a placeholder", placeholder)
		}
		if !strings.Contains(text, "GET 200 you sent Bearer "+placeholder) {
			t.Errorf("the GET's answer did not come back with the value masked:\n%s", text)
		}
		if !strings.Contains(text, "POST 403") || !strings.Contains(text, "bound to GET, HEAD only") {
			t.Errorf("the POST with the placeholder was not refused:\n%s", text)
		}
		sum := sha256.Sum256(otherCert.Raw)
		if !strings.Contains(text, "other 200 other-ok "+hex.EncodeToString(sum[:])) {
			t.Errorf("the unbrokered host was not reached with its own certificate (intercepted?):\n%s", text)
		}
		if !strings.Contains(text, "bundle not writable") {
			t.Errorf("the sandbox could change its trust bundle:\n%s", text)
		}
		js, _ := json.Marshal(out)
		audit, err := os.ReadFile(p.AuditLog)
		if err != nil {
			t.Fatal(err)
		}
		for what, s := range map[string]string{"the sandbox's output": text, "the outcome (--json)": string(js), "the audit log": string(audit)} {
			if strings.Contains(s, token) {
				t.Errorf("%s holds the real value", what)
			}
		}
		brokered := false
		for _, d := range out.Network {
			if d.Brokered == "GH_TOKEN" && d.Method == "GET" && d.Allowed {
				brokered = true
			}
		}
		if !brokered || !strings.Contains(string(audit), `"brokered":"GH_TOKEN"`) {
			t.Errorf("no decision says brokered GH_TOKEN: %+v", out.Network)
		}
	})
}
