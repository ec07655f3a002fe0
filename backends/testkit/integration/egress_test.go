//go:build linux

package integration_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/internal/egresstest"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// fetchThroughProxy fetches each URL with the proxy settings the policy
// gave the command (urllib reads http_proxy), one line per URL: the status
// and the body, or the error.
const fetchThroughProxy = `
import socket, sys, urllib.request, urllib.error
# Direct, without the proxy: the sandbox's own loopback, where nothing
# listens on the canary's port (the host's loopback is another namespace).
try:
    socket.create_connection(("127.0.0.2", int(sys.argv[1])), timeout=5).close()
    print("direct connected")
except OSError as e:
    print("direct refused %s" % e.errno)
for url in sys.argv[2:]:
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            print("%s %d %s" % (url, r.status, r.read().decode().strip()))
    except urllib.error.HTTPError as e:
        print("%s %d refused" % (url, e.code))
    except Exception as e:
        print("%s error %s" % (url, e))
`

// canaryName and refusedName resolve only through the test's resolver,
// canaryName to the loopback canary; the proxy's dialer in this test fails
// it on any address but the canary's, so nothing outside is ever dialled.
const (
	canaryName  = "canary.egress.test"
	refusedName = "refused.egress.test"
)

// onlyUpstream is the test hook under which the proxy knows one name,
// resolving to addr (a loopback canary the test started) and allowed as
// an upstream, and fails the test on a dial to anything else.
func onlyUpstream(t testing.TB, name string, addr netip.AddrPort) egresstest.Hook {
	return egresstest.Hook{
		Upstreams: []netip.Prefix{netip.PrefixFrom(addr.Addr(), 32)},
		Resolver:  testResolver{name: addr.Addr()},
		Dial: func(ctx context.Context, network, a string) (net.Conn, error) {
			if a != addr.String() {
				t.Errorf("the proxy dialled %s %s, not %s at %s", network, a, name, addr)
				return nil, fmt.Errorf("test dialer: %s is not %s", a, name)
			}
			return (&net.Dialer{}).DialContext(ctx, network, a)
		},
	}
}

type testResolver map[string]netip.Addr

func (r testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	// The proxy resolves names rooted ("name."): no search domain.
	if a, ok := r[strings.TrimSuffix(host, ".")]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

// TestNetworkAllowList (issue 36): with `network` a list, the command on
// docker, oci and local reaches an allowed host through the holder's
// forwarder and the host's proxy, and a host not on the list is refused,
// the refusal in the outcome (run --json's network) and a hint naming
// the key; with an empty list the allowed host of the control is
// refused too. The sandbox's own namespace stays loopback-only.
func TestNetworkAllowList(t *testing.T) {
	canary := canaryServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "canary-ok")
	}))
	defer canary.Close()
	canaryAddr := netip.MustParseAddrPort(strings.TrimPrefix(canary.URL, "http://"))
	ctx := egresstest.With(context.Background(), onlyUpstream(t, canaryName, canaryAddr))
	port := canaryAddr.Port()
	allowed := fmt.Sprintf("http://%s:%d/", canaryName, port)
	refused := fmt.Sprintf("http://%s:%d/", refusedName, port)
	// Under gVisor too (the oci backend with runsc, which connects to a
	// bound socket only when told to): docker's runsc takes its flags from
	// the daemon, which does not, and refuses the start.
	forEachBackendAnd(t, []string{gvisor}, func(t *testing.T, k *kit) {
		for _, tt := range []struct {
			name, list  string
			wantAllowed bool
		}{
			{"allowed", fmt.Sprintf(`["%s:%d"]`, canaryName, port), true},
			{"nothing allowed", `[]`, false},
		} {
			t.Run(tt.name, func(t *testing.T) {
				f := newFixture(t)
				f.cfg = withNetwork(t, f, tt.list)
				p := k.build(t, f, "reproducer", currentHost(t))
				if p.Network.Mode != policy.NetworkProxy {
					t.Fatalf("network mode %q, want proxy", p.Network.Mode)
				}
				out, text := k.runOutcomeCtx(t, ctx, p, "python3", "-c", fetchThroughProxy, strconv.Itoa(int(port)), allowed, refused)
				if out.ExitCode != 0 {
					t.Fatalf("exit %d: %s", out.ExitCode, text)
				}
				if !strings.Contains(text, "direct refused") {
					t.Errorf("a direct connection to the canary's port on the loopback was not refused (the sandbox must have its own loopback):\n%s", text)
				}
				gotAllowed := strings.Contains(text, allowed+" 200 canary-ok")
				if gotAllowed != tt.wantAllowed {
					t.Errorf("reached the allowed canary: %v, want %v\n%s", gotAllowed, tt.wantAllowed, text)
				}
				if !strings.Contains(text, refused+" 403 refused") {
					t.Errorf("the host not on the list was not refused by the proxy:\n%s", text)
				}
				var refusedSeen, allowedSeen bool
				for _, d := range out.Network {
					switch {
					case d.Host == refusedName && !d.Allowed && d.Reason != "":
						refusedSeen = true
					case d.Host == canaryName && d.Allowed && d.BytesDown > 0:
						allowedSeen = true
					}
				}
				if !refusedSeen || allowedSeen != tt.wantAllowed {
					t.Errorf("decisions %+v: want %s refused with a reason, %s allowed %v", out.Network, refusedName, canaryName, tt.wantAllowed)
				}
				if rec := lastAudit(t, p.AuditLog); !strings.Contains(rec, `"network":[`) || !strings.Contains(rec, refusedName) {
					t.Errorf("the audit record has no network decisions: %s", rec)
				}
				if !strings.Contains(strings.Join(out.Hints, "\n"), refusedName) || !strings.Contains(strings.Join(out.Hints, "\n"), "[sandbox.reproducer] network") {
					t.Errorf("no hint names the refused host and the key: %q", out.Hints)
				}
			})
		}
	})
}

// lastAudit is the last record of the audit log at path.
func lastAudit(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the audit log: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// withNetwork is f's config with [sandbox.reproducer] network = list.
func withNetwork(t *testing.T, f fixture, list string) *config.File {
	t.Helper()
	return withNetworkFor(t, f, "reproducer", list)
}

// withNetworkFor is f's config with [sandbox.ROLE] network = list.
func withNetworkFor(t *testing.T, f fixture, role, list string) *config.File {
	t.Helper()
	path := filepath.Join(f.root, "triage.toml")
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body = append(body, []byte("[sandbox."+role+"]\nnetwork = "+list+"\n")...)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// canaryServer serves h on 127.0.0.2, not 127.0.0.1: the test allows the
// canary's address as an upstream, and a name resolving to 127.0.0.1 must
// stay refused however the test is set up.
func canaryServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("a canary on 127.0.0.2: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return srv
}
