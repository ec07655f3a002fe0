package runproxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// TestBrokerSecrets: the value comes from this process's environment
// (missing: one line naming the table), the sandbox's variable becomes a
// fresh placeholder.
func TestBrokerSecrets(t *testing.T) {
	p := &policy.Policy{Env: []policy.EnvVar{{Name: "GH_TOKEN", Value: policy.BrokerPlaceholder}, {Name: "PATH", Value: "/bin"}}}
	p.Network.Brokers = []policy.Broker{{Name: "GH_TOKEN", Hosts: []string{"api.github.com"}, Methods: []string{"GET"}, Key: "[sandbox.reproducer.broker.GH_TOKEN]"}}
	t.Setenv("GH_TOKEN", "")
	if _, err := brokerSecrets(p); err == nil || !strings.Contains(err.Error(), "[sandbox.reproducer.broker.GH_TOKEN]: GH_TOKEN is not set") {
		t.Errorf("without the variable: %v", err)
	}
	t.Setenv("GH_TOKEN", "ghp_sandboxTestVALUE0123456789abcdefghij")
	bs, err := brokerSecrets(p)
	if err != nil || len(bs) != 1 || bs[0].Value != os.Getenv("GH_TOKEN") || !strings.HasPrefix(bs[0].Placeholder, egress.PlaceholderPrefix) {
		t.Fatalf("brokers %+v %v", bs, err)
	}
	env := withPlaceholders(p.Env, bs)
	if env[0].Value != bs[0].Placeholder || env[1].Value != "/bin" || p.Env[0].Value != policy.BrokerPlaceholder {
		t.Errorf("env %+v (policy's %+v), want the placeholder in a copy", env, p.Env)
	}
}

// TestTrustBundle: the system roots and the run's CA, read-only; an
// existing file there is not overwritten.
func TestTrustBundle(t *testing.T) {
	dir := t.TempDir()
	ca := []byte("-----BEGIN CERTIFICATE-----\nrun\n-----END CERTIFICATE-----\n")
	if err := writeTrustBundle(dir, ca); err != nil {
		t.Skipf("no system trust bundle here: %v", err)
	}
	path := filepath.Join(dir, filepath.Base(egress.CABundleInSandbox))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if !strings.HasSuffix(string(b), string(ca)) || strings.Count(string(b), "BEGIN CERTIFICATE") < 2 || fi.Mode().Perm() != 0o444 {
		t.Errorf("bundle mode %v, %d certificates, want 0444 with the roots and the run's CA last", fi.Mode(), strings.Count(string(b), "BEGIN CERTIFICATE"))
	}
	if err := writeTrustBundle(dir, ca); err == nil {
		t.Error("an existing bundle was overwritten")
	}
}
