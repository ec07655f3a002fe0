package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/backendtest"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/egress"
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
