package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Broker is a secret the network proxy brokers ([sandbox.<role>.broker.NAME]):
// the sandbox holds a placeholder in NAME, the proxy puts the real value in
// only on requests to Hosts with Methods. The policy holds the binding,
// never the value: the run reads it from triage-sandbox's own environment
// when it starts the proxy, so no file a sandbox could write is read.
type Broker struct {
	Name    string   `json:"name"`
	Hosts   []string `json:"hosts"`
	Methods []string `json:"methods"`
	Key     string   `json:"key"` // the config table, for refusals
}

// BrokerPlaceholder stands for the per-run placeholder in a built policy;
// the run puts a fresh one in its copy (package sandbox) before a backend
// sees it.
const BrokerPlaceholder = "<a placeholder made per run>"

// BrokerCAVars are the variables naming the trust bundle (the system roots
// and the run's broker CA) for the common TLS stacks: OpenSSL and Go,
// Python requests, curl, Node (extra CAs only), git.
var BrokerCAVars = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"}

// brokers checks role's brokered secrets against its network and the
// host's environment: an allow-list that names each host, the variable
// set (refused with one line naming the table and what to do otherwise).
func brokers(cfg *config.File, sb config.Sandbox, role profiles.Role, host Host, n Network) ([]Broker, error) {
	if len(sb.Broker) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(sb.Broker))
	for name := range sb.Broker {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []Broker
	bound := map[string]string{}
	for _, name := range names {
		b := sb.Broker[name]
		key := brokerKey(cfg, role, name)
		if n.Mode != NetworkProxy {
			return nil, fmt.Errorf("%s: a brokered secret goes through the network proxy, and %s is not a list; set it to the hosts allowed (e.g. %s = [%q]) or remove %s",
				key, n.Key, n.Key, firstOr(b.Hosts, "api.github.com"), key)
		}
		hosts := make([]string, 0, len(b.Hosts))
		for _, h := range b.Hosts {
			name, err := allow.Normalize(h)
			if err != nil {
				return nil, fmt.Errorf("%s: hosts: %w", key, err)
			}
			if !allow.OnSomePort(n.Rules, name) {
				return nil, fmt.Errorf("%s: host %s is not on the network allow-list (%s); add %q to it or remove the host", key, name, n.Key, name)
			}
			if other, ok := bound[name]; ok {
				return nil, fmt.Errorf("%s: host %s is bound to %s already; one secret per host", key, name, other)
			}
			bound[name] = key
			hosts = append(hosts, name)
		}
		v, ok := host.Getenv(name)
		if !ok || v == "" {
			return nil, fmt.Errorf("%s: %s is not set in triage-sandbox's environment; export the secret (a read-only token) before the run, or remove %s", key, name, key)
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r >= 0x7f }) {
			return nil, fmt.Errorf("%s: %s holds a control or non-ASCII character, which cannot go in a header; check the variable", key, name)
		}
		methods := b.Methods
		if len(methods) == 0 {
			methods = []string{"GET", "HEAD"}
		}
		out = append(out, Broker{Name: name, Hosts: hosts, Methods: slices.Clone(methods), Key: key})
	}
	return out, nil
}

func firstOr(l []string, def string) string {
	if len(l) > 0 {
		return l[0]
	}
	return def
}

// brokerKey names the table a secret's binding came from.
func brokerKey(cfg *config.File, role profiles.Role, name string) string {
	own := cfg.Agent.Broker
	if role == profiles.RoleReproducer {
		own = cfg.Reproducer.Broker
	}
	if own == nil && cfg.Sandbox.Broker != nil {
		return "[sandbox.broker." + name + "]"
	}
	return "[sandbox." + string(role) + ".broker." + name + "]"
}

// brokerEnv gives each brokered variable its placeholder (over anything
// that passed or set_env set: the real value never passes) and points the
// TLS stacks at the run's trust bundle.
func brokerEnv(p *Policy) {
	if len(p.Network.Brokers) == 0 {
		return
	}
	for _, b := range p.Network.Brokers {
		setEnv(p, b.Name, BrokerPlaceholder, fmt.Sprintf("%s: a placeholder; the network proxy puts the real value in on %s requests to %s",
			b.Key, strings.Join(b.Methods, ", "), strings.Join(b.Hosts, ", ")))
	}
	for _, v := range BrokerCAVars {
		setEnv(p, v, egress.CABundleInSandbox, "brokered secrets: the system roots and the run's broker CA (read-only, written by the host side)")
	}
	p.Env = sortEnv(p.Env)
}
