package hints

import (
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

func TestEgressHints(t *testing.T) {
	rules, err := allow.Parse([]string{"pypi.org"})
	if err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Network: policy.Network{Mode: policy.NetworkProxy, Rules: rules, Key: "[sandbox.reproducer] network",
		Brokers: []policy.Broker{{Name: "GH_TOKEN", Hosts: []string{"pypi.org"}, Methods: []string{"GET"}, Key: "[sandbox.reproducer.broker.GH_TOKEN]"}}}}
	tests := []struct {
		name string
		r    Refusal
		want string
	}{
		{"not listed", Refusal{Host: "files.example.org", Port: 443, Reason: "not on the allow-list"},
			`add "files.example.org" to [sandbox.reproducer] network`},
		{"another port", Refusal{Host: "files.example.org", Port: 8443, Reason: "x"},
			`add "files.example.org:8443" to [sandbox.reproducer] network`},
		{"an address", Refusal{Host: "169.254.169.254", Port: 80, Reason: "an address"},
			"an address cannot be allowed, only a host name in [sandbox.reproducer] network"},
		{"listed but resolved somewhere refused", Refusal{Host: "pypi.org", Port: 443, Reason: "resolves to 10.0.0.1"},
			"no entry of [sandbox.reproducer] network allows that"},
		{"a brokered secret's method", Refusal{Host: "pypi.org", Port: 443, Reason: "brokered GH_TOKEN is bound to GET only; a POST request with it is refused"},
			"set in [sandbox.reproducer.broker.GH_TOKEN]"},
		{"no target (refused before it was read)", Refusal{Reason: "wrong proxy credentials"},
			"the network proxy refused a request (wrong proxy credentials)"},
		{"a hostile name is neutralised", Refusal{Host: "evil\x1b[2J.example.org", Port: 443},
			"evil\u241b[2J.example.org"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Egress(p, []Refusal{tt.r, tt.r})
			if len(got) != 1 || !strings.Contains(got[0], tt.want) || strings.ContainsRune(got[0], 0x1b) {
				t.Fatalf("hints = %q, want one containing %q", got, tt.want)
			}
		})
	}
}
