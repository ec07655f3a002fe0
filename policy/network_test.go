package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestNetworkAllowList: a list in a role's network key is the proxy mode
// with its rules, the key that set it, the proxy variables (over set_env)
// and requirements no backend without the proxy meets; the agent stays
// offline when only the reproducer has a list.
func TestNetworkAllowList(t *testing.T) {
	cfg := workspace(t, "[sandbox]\nset_env = { HTTPS_PROXY = \"http://elsewhere:1\" }\n[sandbox.reproducer]\nnetwork = [\"python\", \"files.example.org:443\"]\n")
	p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t), Options{})
	must(t, err)
	if p.Network.Mode != NetworkProxy || p.Network.Key != "[sandbox.reproducer] network" {
		t.Fatalf("network = %+v, want the proxy mode set by [sandbox.reproducer] network", p.Network)
	}
	var hosts []string
	for _, r := range p.Network.Rules {
		hosts = append(hosts, r.Host)
	}
	if !slices.Contains(hosts, "files.example.org") || len(hosts) < 2 {
		t.Errorf("rules = %+v, want the preset's hosts and files.example.org", p.Network.Rules)
	}
	env := map[string]string{}
	for _, e := range p.Env {
		env[e.Name] = e.Value
	}
	for _, n := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy"} {
		if env[n] != "http://"+egress.ForwardAddr {
			t.Errorf("%s = %q, want the forwarder", n, env[n])
		}
	}
	if env["NO_PROXY"] != "localhost,127.0.0.1,::1" || env["no_proxy"] != env["NO_PROXY"] {
		t.Errorf("NO_PROXY = %q, no_proxy = %q", env["NO_PROXY"], env["no_proxy"])
	}
	if req := p.Requirements(); !slices.Contains(req, profiles.CapEgressProxy) || !slices.Contains(req, profiles.CapOwnLoopback) {
		t.Errorf("requirements = %v, want own_loopback and egress_proxy", req)
	}
	if !strings.Contains(Explain(p), "files.example.org") {
		t.Errorf("explain does not show the rules:\n%s", Explain(p))
	}

	agent, err := Build(cfg, profiles.RoleAgent, fakeHost(t), Options{})
	must(t, err)
	if agent.Network.Mode != NetworkLoopback {
		t.Errorf("agent network = %q, want loopback", agent.Network.Mode)
	}
	if slices.ContainsFunc(agent.Env, func(e EnvVar) bool { return e.Name == "HTTP_PROXY" }) {
		t.Error("the offline agent got the proxy variables")
	}
}

// TestEnforceAllowListFailsClosed: a backend without the proxy is refused
// whatever accept_weaker says, naming the key to change.
func TestEnforceAllowListFailsClosed(t *testing.T) {
	cfg := workspace(t, "[sandbox.reproducer]\nnetwork = []\naccept_weaker = [\"own_loopback\"]\n")
	p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t), Options{})
	must(t, err)
	for _, tt := range []struct {
		name    string
		caps    []Capability
		refused bool
	}{
		{"without the proxy", []Capability{profiles.CapOwnLoopback, profiles.CapPidNamespace}, true},
		{"no capabilities at all", nil, true},
		{"with the proxy", []Capability{profiles.CapOwnLoopback, profiles.CapEgressProxy, profiles.CapPidNamespace, profiles.CapImageRoot,
			profiles.CapMemoryLimit, profiles.CapPidsLimit, profiles.CapCPULimit, profiles.CapBoundedWrites, profiles.CapMaskUnderMount}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Enforce(p, "kubernetes", tt.caps)
			if tt.refused != (err != nil) {
				t.Fatalf("Enforce = %v, want refused %v", err, tt.refused)
			}
			if err != nil && !strings.Contains(err.Error(), "[sandbox.reproducer] network = false") {
				t.Errorf("the refusal does not name the key to change: %v", err)
			}
		})
	}
}

// TestAllowListWarm: an allow-list with a pool or a session is served (the
// keeper holds a proxy per sandbox, package warm): the policy keeps the
// list and the warm mode.
func TestAllowListWarm(t *testing.T) {
	for _, tt := range []struct {
		name, toml string
		role       profiles.Role
		session    string
		want       Warm
	}{
		{"pool", "[sandbox.reproducer]\nnetwork = [\"python\"]\npool = 2\n", profiles.RoleReproducer, "", Warm{Pool: 2}},
		{"session", "[sandbox.agent]\nnetwork = [\"python\"]\n", profiles.RoleAgent, "s1", Warm{Session: "s1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build(workspace(t, tt.toml), tt.role, fakeHost(t), Options{Session: tt.session})
			if err != nil {
				t.Fatalf("Build = %v, want the allow-list served warm", err)
			}
			if p.Network.Mode != NetworkProxy || len(p.Network.Rules) == 0 {
				t.Errorf("network %+v, want the allow-list", p.Network)
			}
			if p.Warm.Pool != tt.want.Pool || p.Warm.Session != tt.want.Session {
				t.Errorf("warm %+v, want %+v", p.Warm, tt.want)
			}
		})
	}
}

// TestAllowListWarnsWhenInstallsDenied: a role whose allow-list names a
// package index while the gate denies package installs gets a warning
// naming the key that would allow them; it goes once the rule is disabled
// or made to ask, and never comes for a list of other hosts.
func TestAllowListWarnsWhenInstallsDenied(t *testing.T) {
	for _, tt := range []struct {
		name, role string
		want       bool
	}{
		{"preset, rule on", "network = [\"python\", \"npm\"]\n", true},
		{"preset, rule disabled", "network = [\"python\"]\ngate_disable = [\"package-install\"]\n", false},
		{"preset, rule asks", "network = [\"go\"]\ngate_confirm = [\"package-install\"]\n", false},
		{"hosts only", "network = [\"files.example.org\"]\n", false},
		{"offline", "network = false\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build(workspace(t, "[sandbox.reproducer]\n"+tt.role), profiles.RoleReproducer, fakeHost(t), Options{})
			must(t, err)
			got := slices.ContainsFunc(p.Warnings, func(w string) bool {
				return strings.Contains(w, `gate_disable = ["package-install"]`) && strings.Contains(w, "[sandbox.reproducer]")
			})
			if got != tt.want {
				t.Errorf("warned %v, want %v: %q", got, tt.want, p.Warnings)
			}
		})
	}
}

// TestEnvListHostProxy: with the run's proxy on the host's loopback (a
// backend sharing it: seatbelt) the command's proxy variables name that
// port with the run's secret, NO_PROXY and everything else stay, and
// neither the hash nor the policy's JSON changes or shows the secret.
func TestEnvListHostProxy(t *testing.T) {
	cfg := workspace(t, "[sandbox.reproducer]\nnetwork = [\"python\"]\n")
	p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t), Options{})
	must(t, err)
	const secret = "5ec7e75ec7e75ec7e75ec7e75ec7e75e"
	run := *p
	run.Network.HostProxy = &HostProxy{Port: 41234, Secret: secret}
	want := "http://" + egress.ProxyUser + ":" + secret + "@127.0.0.1:41234"
	sp := ScratchPaths{Home: "/h", Tmp: "/t"}
	env := map[string]string{}
	for _, kv := range run.EnvList(sp) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for _, n := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy"} {
		if env[n] != want {
			t.Errorf("%s = %q, want %q", n, env[n], want)
		}
	}
	if env["NO_PROXY"] != "localhost,127.0.0.1,::1" || env["HOME"] != "/h" {
		t.Errorf("NO_PROXY = %q, HOME = %q", env["NO_PROXY"], env["HOME"])
	}
	if slices.ContainsFunc(p.EnvList(sp), func(kv string) bool { return strings.Contains(kv, secret) }) {
		t.Error("the policy without the run's proxy names it")
	}
	if run.Hash() != p.Hash() {
		t.Error("the run's proxy changed the policy's hash")
	}
	b, err := json.Marshal(&run)
	must(t, err)
	if strings.Contains(string(b), secret) || strings.Contains(Explain(&run), secret) {
		t.Error("the policy's JSON or explanation shows the run's secret")
	}
	// Only the proxy mode: a stale HostProxy on another mode names nothing.
	off := run
	off.Network.Mode = NetworkLoopback
	if slices.ContainsFunc(off.EnvList(sp), func(kv string) bool { return strings.Contains(kv, secret) }) {
		t.Error("a loopback policy got the proxy's secret")
	}
}
