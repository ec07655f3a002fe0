package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// socketSeer is the fake backend recording, at each Start, the socket
// directory the policy named and what was there.
type socketSeer struct {
	*backendtest.Backend
	dir     string
	mode    os.FileMode
	sockets bool
}

func (b *socketSeer) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	b.dir = p.Network.SocketDir
	if fi, err := os.Stat(b.dir); err == nil {
		b.mode = fi.Mode().Perm()
	}
	if fi, err := os.Stat(filepath.Join(b.dir, filepath.Base(egress.SocketInSandbox))); err == nil {
		b.sockets = fi.Mode()&os.ModeSocket != 0
	}
	return b.Backend.Start(ctx, p, opts)
}

// TestRunStartsTheProxy: with an allow-list the run path starts the proxy
// before the sandbox, on a socket in a private directory it names to the
// backend, and removes it with the sandbox, started or not; the policy
// the caller holds is not changed.
func TestRunStartsTheProxy(t *testing.T) {
	for _, tt := range []struct {
		name     string
		startErr error
	}{{"run", nil}, {"start fails", errors.New("no such image")}} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			cfg := config.Default(root)
			cfg.Reproducer.Network = &config.Network{List: true, Allow: []string{"files.example.org"}}
			p, err := policy.Build(cfg, profiles.RoleReproducer, testHost(t, root), policy.Options{Backend: "fake"})
			if err != nil {
				t.Fatal(err)
			}
			fake := newFake()
			fake.Caps = append(fake.Caps, profiles.CapEgressProxy)
			fake.StartErr = tt.startErr
			b := &socketSeer{Backend: fake}
			_, err = Run(context.Background(), b, Request{Policy: p, Command: backends.Command{Argv: []string{"true"}}, NoGate: true, NoAudit: true})
			if (err != nil) != (tt.startErr != nil) {
				t.Fatalf("Run = %v", err)
			}
			if b.dir == "" || !b.sockets || b.mode != 0o700 {
				t.Fatalf("at Start: socket dir %q (mode %o), socket there %v; want a 0700 directory holding the socket", b.dir, b.mode, b.sockets)
			}
			if _, err := os.Stat(b.dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the socket directory %s outlived the run: %v", b.dir, err)
			}
			if p.Network.SocketDir != "" {
				t.Error("the caller's policy was changed")
			}
		})
	}
}

// TestRunRefusesAllowListWithoutProxyCapability: a backend without
// egress_proxy is refused before any proxy or sandbox exists.
func TestRunRefusesAllowListWithoutProxyCapability(t *testing.T) {
	root := t.TempDir()
	cfg := config.Default(root)
	cfg.Reproducer.Network = &config.Network{List: true}
	p, err := policy.Build(cfg, profiles.RoleReproducer, testHost(t, root), policy.Options{Backend: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	fake := newFake()
	_, err = Run(context.Background(), fake, Request{Policy: p, Command: backends.Command{Argv: []string{"true"}}, NoGate: true, NoAudit: true})
	if err == nil || !strings.Contains(err.Error(), "egress_proxy") || fake.Starts() != 0 {
		t.Fatalf("Run = %v after %d starts, want a refusal naming egress_proxy and no start", err, fake.Starts())
	}
}

// hostProxySeer is a fake backend whose sandbox shares the host's
// loopback (no own_loopback, as seatbelt): at Start it uses the proxy the
// policy names as a command would, through its proxy variables, and as
// another local process would, without them.
type hostProxySeer struct {
	*backendtest.Backend
	t       *testing.T
	proxy   *policy.HostProxy
	withURL string // the answer through the command's proxy URL
	without int    // the status without credentials
	url     string // the command's HTTP_PROXY
}

func (b *hostProxySeer) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	b.proxy = p.Network.HostProxy
	var proxyURL string
	for _, kv := range p.EnvList(policy.ScratchPaths{Home: "/h", Tmp: "/t"}) {
		if v, ok := strings.CutPrefix(kv, "HTTP_PROXY="); ok {
			proxyURL = v
		}
	}
	b.url = proxyURL
	if b.proxy != nil && proxyURL != "" {
		b.withURL = proxyGet(b.t, proxyURL)
		u, _ := url.Parse(proxyURL)
		u.User = nil
		code, _, _ := strings.Cut(proxyGet(b.t, u.String()), " ")
		b.without, _ = strconv.Atoi(code)
	}
	return b.Backend.Start(ctx, p, opts)
}

// proxyGet asks the proxy at proxyURL for a name on no list (nothing is
// resolved or dialled for it) and returns "STATUS BODY".
func proxyGet(t *testing.T, proxyURL string) string {
	u, err := url.Parse(proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
	resp, err := c.Get("http://nothing.invalid/")
	if err != nil {
		return "0 " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strconv.Itoa(resp.StatusCode) + " " + string(b)
}

// TestRunStartsHostProxy: for a backend without a loopback of its own the
// run path starts the proxy on a port of the host's loopback asking for a
// per-run secret, names both to the backend (never in the caller's policy
// or the outcome), and closes the port with the run.
func TestRunStartsHostProxy(t *testing.T) {
	root := t.TempDir()
	cfg := config.Default(root)
	cfg.Reproducer.Network = &config.Network{List: true, Allow: []string{"files.example.org"}}
	cfg.Reproducer.AcceptWeaker = []profiles.Capability{profiles.CapOwnLoopback}
	p, err := policy.Build(cfg, profiles.RoleReproducer, testHost(t, root), policy.Options{Backend: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	b := &hostProxySeer{Backend: newFake().Without(profiles.CapOwnLoopback), t: t}
	b.Caps = append(b.Caps, profiles.CapEgressProxy)
	// The command prints its proxy variable, secret and all.
	b.Shared.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
		_, err := io.WriteString(out.Stdout, "HTTP_PROXY="+b.url+"\n")
		return backends.Result{}, err
	}
	var shown strings.Builder
	out, err := Run(context.Background(), b, Request{Policy: p, Command: backends.Command{Argv: []string{"env"}}, NoGate: true, NoAudit: true,
		Redactor: output.NewRedactor(nil, nil), Streams: backends.Streams{Stdout: &shown, Stderr: io.Discard}})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if !strings.Contains(shown.String(), "<redacted:egress-proxy-secret>") || strings.Contains(shown.String(), b.proxy.Secret) {
		t.Errorf("the command's output as shown: %q, want the secret redacted", shown.String())
	}
	if b.proxy == nil || b.proxy.Port == 0 || len(b.proxy.Secret) < 32 {
		t.Fatalf("at Start: host proxy %+v, want a port and a secret", b.proxy)
	}
	if !strings.HasPrefix(b.withURL, "403 ") || !strings.Contains(b.withURL, "not on the network allow-list") {
		t.Errorf("through the command's proxy URL: %q, want the proxy's 403 for a name not on the list", b.withURL)
	}
	if b.without != http.StatusProxyAuthRequired {
		t.Errorf("without the credentials: status %d, want 407", b.without)
	}
	if len(out.Network) != 2 || out.Network[0].Host != "nothing.invalid" || out.Network[1].Host != "" {
		t.Errorf("decisions %+v, want the refused name, then the refusal without credentials (no host)", out.Network)
	}
	j, _ := json.Marshal(out)
	if strings.Contains(string(j), b.proxy.Secret) || p.Network.HostProxy != nil || p.Network.SocketDir != "" {
		t.Error("the secret is in the outcome, or the caller's policy was changed")
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.proxy.Port)), time.Second); err == nil {
		c.Close()
		t.Errorf("the proxy's port %d still answers after the run", b.proxy.Port)
	}
}
