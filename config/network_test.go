package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestNetworkKey(t *testing.T) {
	tests := []struct {
		name, toml string
		want       *Network
		err        string
	}{
		{"false", "network = false", &Network{}, ""},
		{"true", "network = true", &Network{On: true}, ""},
		{"list", `network = ["python", "files.example.org:443"]`, &Network{List: true, Allow: []string{"python", "files.example.org:443"}}, ""},
		{"empty list allows nothing", `network = []`, &Network{List: true, Allow: []string{}}, ""},
		{"bad entry", `network = ["python", "files.example.org:http"]`, nil,
			`triage.toml:2: sandbox.reproducer.network: item 2: entry "files.example.org:http": `},
		{"an address", `network = ["169.254.169.254"]`, nil, `triage.toml:2: sandbox.reproducer.network: item 1: entry "169.254.169.254": `},
		{"wrong type", `network = "python"`, nil,
			`triage.toml:2: sandbox.reproducer.network: expected a boolean or an array of allow-list entries, got string "python"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("triage.toml", []byte("[sandbox.reproducer]\n"+tt.toml+"\n"), "/ws")
			if tt.err != "" {
				if err == nil || len(err.Error()) < len(tt.err) || err.Error()[:len(tt.err)] != tt.err {
					t.Fatalf("err = %v, want it to start with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := f.Resolve("reproducer").Network
			if got == nil || got.On != tt.want.On || got.List != tt.want.List || !slices.Equal(got.Allow, tt.want.Allow) {
				t.Errorf("network = %+v, want %+v", got, tt.want)
			}
			if agent := f.Resolve("agent").Network; agent != nil {
				t.Errorf("the agent's network was set: %+v", agent)
			}
			if k := f.NetworkKey("reproducer"); k != "[sandbox.reproducer] network" {
				t.Errorf("NetworkKey = %q", k)
			}
		})
	}
}

func TestBrokerKey(t *testing.T) {
	tests := []struct {
		name, toml string
		want       map[string]Broker
		err        string
	}{
		{"default methods", "[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"api.github.com\"]",
			map[string]Broker{"GH_TOKEN": {Hosts: []string{"api.github.com"}, Methods: []string{"GET", "HEAD"}}}, ""},
		{"methods upper-cased", "[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"api.github.com\"]\nmethods = [\"get\"]",
			map[string]Broker{"GH_TOKEN": {Hosts: []string{"api.github.com"}, Methods: []string{"GET"}}}, ""},
		{"no hosts", "[sandbox.reproducer.broker.GH_TOKEN]\nmethods = [\"GET\"]", nil,
			"triage.toml:1: sandbox.reproducer.broker.GH_TOKEN: no hosts"},
		{"wildcard host", "[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"*.github.com\"]", nil,
			`triage.toml:2: sandbox.reproducer.broker.GH_TOKEN.hosts: item 1: "*.github.com" is not a host name`},
		{"address", "[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"140.82.112.6\"]", nil,
			`triage.toml:2: sandbox.reproducer.broker.GH_TOKEN.hosts: item 1: "140.82.112.6" is an address`},
		{"CONNECT", "[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"api.github.com\"]\nmethods = [\"CONNECT\"]", nil,
			`triage.toml:3: sandbox.reproducer.broker.GH_TOKEN.methods: item 1: "CONNECT" is not an HTTP method`},
		{"bad name", "[sandbox.reproducer.broker.\"GH-TOKEN\"]\nhosts = [\"api.github.com\"]", nil,
			`triage.toml:1: sandbox.reproducer.broker.GH-TOKEN: "GH-TOKEN" is not a variable name`},
		{"unknown key", "[sandbox.reproducer.broker.GH_TOKEN]\nhosts = [\"api.github.com\"]\nmethod = [\"GET\"]", nil,
			`triage.toml:3: sandbox.reproducer.broker.GH_TOKEN.method: unknown key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("triage.toml", []byte(tt.toml+"\n"), "/ws")
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to start with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Resolve("reproducer").Broker; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("broker = %+v, want %+v", got, tt.want)
			}
			if got := f.Resolve("agent").Broker; got != nil {
				t.Errorf("the agent's broker was set: %+v", got)
			}
		})
	}
}
