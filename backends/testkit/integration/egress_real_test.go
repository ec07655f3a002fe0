//go:build linux

package integration_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/internal/egresstest"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// TestRealRegistry is a manual figure, never part of the test suite: it
// reaches a public package registry, which no test may. It runs only when
// TRIAGE_SANDBOX_REAL_SCRIPT names a shell script (a download, a cold
// `go mod download`, an `npm install`), and runs it once on docker in the
// reproducer role with TRIAGE_SANDBOX_REAL_ARM's network:
//
//   - "allow": network = TRIAGE_SANDBOX_REAL_ALLOW (comma-separated entries,
//     presets too), every connection through the host's proxy;
//   - "open": network = true, the bridge's route out, no proxy.
//
// A pair of arms timed as whole commands gives the proxy's overhead on a
// real registry. The proxy refuses names that resolve into the reserved
// ranges, and some machines (this workplace's among them) resolve the
// registries into the documentation range through an intercepting proxy:
// the allowed names' own addresses, resolved here before the run, are
// therefore passed as test upstreams. Nothing else is widened: the
// proxy's resolver, dialer and every other check are the real ones.
func TestRealRegistry(t *testing.T) {
	script := os.Getenv("TRIAGE_SANDBOX_REAL_SCRIPT")
	if script == "" {
		t.Skip("a manual figure against a public registry: set TRIAGE_SANDBOX_REAL_SCRIPT, TRIAGE_SANDBOX_REAL_ARM (allow or open) and TRIAGE_SANDBOX_REAL_ALLOW")
	}
	arm := os.Getenv("TRIAGE_SANDBOX_REAL_ARM")
	k := newKit(t, docker.Name)
	f := newFixture(t)
	ctx := context.Background()
	// Both arms may install: the figure is the network's, not the gate's.
	const installs = "\ngate_disable = [\"package-install\"]"
	switch arm {
	case "open":
		f.cfg = withNetwork(t, f, "true"+installs)
	case "allow":
		entries := strings.Split(os.Getenv("TRIAGE_SANDBOX_REAL_ALLOW"), ",")
		rules, err := allow.Parse(entries)
		if err != nil {
			t.Fatal(err)
		}
		var ups []netip.Prefix
		for _, r := range rules {
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			addrs, err := net.DefaultResolver.LookupNetIP(lctx, "ip", r.Host)
			cancel()
			if err != nil {
				t.Fatalf("resolving %s: %v", r.Host, err)
			}
			for _, a := range addrs {
				ups = append(ups, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			}
		}
		ctx = egresstest.With(ctx, egresstest.Hook{Upstreams: ups})
		f.cfg = withNetwork(t, f, `["`+strings.Join(entries, `","`)+`"]`+installs)
	default:
		t.Fatalf("TRIAGE_SANDBOX_REAL_ARM is %q, want allow or open", arm)
	}
	p := k.build(t, f, "reproducer", currentHost(t))
	if arm == "allow" && p.Network.Mode != policy.NetworkProxy {
		t.Fatalf("network mode %q, want proxy", p.Network.Mode)
	}
	start := time.Now()
	out, text := k.runOutcomeCtx(t, ctx, p, "sh", "-c", script)
	t.Logf("arm %s: exit %d in %v, %d decisions\n%s", arm, out.ExitCode, time.Since(start), len(out.Network), text)
	if out.ExitCode != 0 {
		t.Fatalf("exit %d; network %+v; hints %q", out.ExitCode, out.Network, out.Hints)
	}
	for _, d := range out.Network {
		if !d.Allowed {
			t.Errorf("refused: %+v", d)
		}
	}
}
