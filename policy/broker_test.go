package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

const brokerToken = "ghp_policyTestVALUE0123456789abcdefghijkl"

// TestBroker: a brokered secret becomes the policy's binding and a
// placeholder in the environment, never the value (even when env names
// the variable exactly); the TLS stacks point at the bundle.
func TestBroker(t *testing.T) {
	cfg := workspace(t, "[sandbox]\nenv = [\"GH_TOKEN\"]\nset_env = { GH_TOKEN = \"x\" }\n[sandbox.reproducer]\nnetwork = [\"api.github.com\"]\n[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"API.github.com\"]\n")
	p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t, "GH_TOKEN="+brokerToken), Options{})
	must(t, err)
	if len(p.Network.Brokers) != 1 {
		t.Fatalf("brokers = %+v", p.Network.Brokers)
	}
	b := p.Network.Brokers[0]
	if b.Name != "GH_TOKEN" || strings.Join(b.Hosts, ",") != "api.github.com" || strings.Join(b.Methods, ",") != "GET,HEAD" || b.Key != "[sandbox.reproducer.broker.GH_TOKEN]" {
		t.Errorf("broker = %+v", b)
	}
	env := map[string]string{}
	for _, e := range p.Env {
		env[e.Name] = e.Value
	}
	if env["GH_TOKEN"] != BrokerPlaceholder {
		t.Errorf("GH_TOKEN = %q, want the placeholder marker", env["GH_TOKEN"])
	}
	for _, v := range BrokerCAVars {
		if env[v] != egress.CABundleInSandbox {
			t.Errorf("%s = %q, want the bundle", v, env[v])
		}
	}
	js, _ := json.Marshal(p)
	if strings.Contains(string(js), brokerToken) || strings.Contains(Explain(p), brokerToken) {
		t.Error("the policy holds the real value")
	}
	if !strings.Contains(Explain(p), "brokered GH_TOKEN") {
		t.Errorf("explain does not show the broker:\n%s", Explain(p))
	}
}

func TestBrokerRefused(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		env        []string
		want       string
	}{
		{"host not on the list", "[sandbox.reproducer]\nnetwork = [\"python\"]\n[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"api.github.com\"]\n",
			[]string{"GH_TOKEN=" + brokerToken}, "[sandbox.reproducer.broker.GH_TOKEN]: host api.github.com is not on the network allow-list ([sandbox.reproducer] network); add \"api.github.com\""},
		{"no allow-list", "[sandbox.reproducer]\nnetwork = true\n[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"api.github.com\"]\n",
			[]string{"GH_TOKEN=" + brokerToken}, "a brokered secret goes through the network proxy, and [sandbox.reproducer] network is not a list"},
		{"value not set", "[sandbox.reproducer]\nnetwork = [\"api.github.com\"]\n[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"api.github.com\"]\n",
			nil, "GH_TOKEN is not set in triage-sandbox's environment"},
		{"value empty", "[sandbox.reproducer]\nnetwork = [\"api.github.com\"]\n[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"api.github.com\"]\n",
			[]string{"GH_TOKEN="}, "GH_TOKEN is not set"},
		{"two on one host", "[sandbox.reproducer]\nnetwork = [\"api.github.com\"]\n[sandbox.reproducer.broker.A]\nhosts = [\"api.github.com\"]\n[sandbox.reproducer.broker.B]\nhosts = [\"api.github.com\"]\n",
			[]string{"A=" + brokerToken, "B=" + brokerToken}, "bound to [sandbox.reproducer.broker.A] already"},
		{"in [sandbox], agent offline", "[sandbox.broker.GH_TOKEN]\nhosts = [\"api.github.com\"]\n",
			[]string{"GH_TOKEN=" + brokerToken}, "[sandbox.broker.GH_TOKEN]: a brokered secret goes through the network proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(workspace(t, tc.toml), profiles.RoleReproducer, fakeHost(t, tc.env...), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Build: %v, want one line saying %q", err, tc.want)
			}
		})
	}
}
