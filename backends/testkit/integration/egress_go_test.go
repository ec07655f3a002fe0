//go:build linux

package integration_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/triage-sandbox/triage-sandbox/internal/egresstest"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// goproxyName is the module proxy's name; only the test's resolver knows
// it (the loopback canary serving a file-based module proxy).
const goproxyName = "goproxy.egress.test"

// TestGoModDownloadThroughAllowList (issue 36's "done when", with a local
// module proxy instead of the internet): with the reproducer allowed only
// the module proxy's host, `go mod download` of a named module version
// succeeds on docker, oci and local, through the forwarder and the host's
// proxy; the decision names the entry that allowed it.
func TestGoModDownloadThroughAllowList(t *testing.T) {
	dir := t.TempDir()
	publishModule(t, dir, module.Version{Path: "example.com/greet", Version: "v1.0.0"},
		filepath.Join("..", "..", "..", "cmd", "triage-sandbox", "testdata", "goproxy", "example.com", "greet@v1.0.0"))
	srv := canaryServer(t, http.FileServer(http.Dir(dir)))
	defer srv.Close()
	addr := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://"))
	ctx := egresstest.With(context.Background(), onlyUpstream(t, goproxyName, addr))
	entry := fmt.Sprintf("%s:%d", goproxyName, addr.Port())
	script := fmt.Sprintf(`export GOPROXY=http://%s GOSUMDB=off GOTOOLCHAIN=local GOFLAGS=-modcacherw GOMODCACHE="$TMPDIR/gomod"
cd "$TMPDIR" && /usr/local/go/bin/go mod download -json example.com/greet@v1.0.0`, entry)
	forEachBackend(t, func(t *testing.T, k *kit) {
		if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
			t.Skip("the host has no /usr/local/go/bin/go")
		}
		f := newFixture(t)
		f.cfg = withNetwork(t, f, fmt.Sprintf(`["%s"]`, entry))
		p := k.build(t, f, "reproducer", currentHost(t))
		if p.Network.Mode != policy.NetworkProxy {
			t.Fatalf("network mode %q, want proxy", p.Network.Mode)
		}
		out, text := k.runOutcomeCtx(t, ctx, p, "sh", "-c", script)
		if out.ExitCode != 0 || !strings.Contains(text, `"Version": "v1.0.0"`) {
			t.Fatalf("go mod download: exit %d\n%s\nnetwork %+v hints %q", out.ExitCode, text, out.Network, out.Hints)
		}
		for _, d := range out.Network {
			if !d.Allowed || d.Host != goproxyName || d.Rule != entry {
				t.Errorf("decision %+v: want every connection to %s allowed by %q", d, goproxyName, entry)
			}
		}
		if len(out.Network) == 0 {
			t.Error("no decision recorded")
		}
	})
}

// publishModule puts module version v, from the directory src, in a
// file-based module proxy at proxy.
func publishModule(t *testing.T, proxy string, v module.Version, src string) {
	t.Helper()
	dir := filepath.Join(proxy, filepath.FromSlash(v.Path), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, v.Version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := modzip.CreateFromDir(f, v, src); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		v.Version + ".mod":  string(mod),
		v.Version + ".info": `{"Version":"` + v.Version + `","Time":"2024-01-01T00:00:00Z"}`,
		"list":              v.Version + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
