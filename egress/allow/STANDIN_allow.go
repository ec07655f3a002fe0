package allow

// STAND-IN for the list parser being written in /work/wt/proxy (issue 36):
// exactly the agreed API, minimal. The merger drops this file for theirs.

import (
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one allowed destination.
type Rule struct {
	Host string // lower case, no trailing dot; "*.example.org" matches below example.org only
	Port int    // 0: 80 and 443
	From string // the config entry or "preset <name>" it came from, for decisions and hints
}

var presets = map[string][]string{
	"python": {"pypi.org", "files.pythonhosted.org"},
	"npm":    {"registry.npmjs.org"},
	"go":     {"proxy.golang.org", "sum.golang.org"},
	"crates": {"index.crates.io", "static.crates.io", "crates.io"},
}

// Presets maps a preset name to its entries.
func Presets() map[string][]string { return maps.Clone(presets) }

// Parse reads entries; presets are expanded.
func Parse(entries []string) ([]Rule, error) {
	var out []Rule
	for _, e := range entries {
		if p, ok := presets[e]; ok {
			for _, pe := range p {
				r, err := parseOne(pe)
				if err != nil {
					return nil, err
				}
				r.From = "preset " + e
				out = append(out, r)
			}
			continue
		}
		r, err := parseOne(e)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseOne(e string) (Rule, error) {
	host, port := e, 0
	if h, p, ok := strings.Cut(e, ":"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Rule{}, fmt.Errorf("entry %q: the port must be a number from 1 to 65535, e.g. \"files.example.org:443\"", e)
		}
		host, port = h, n
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	name := strings.TrimPrefix(host, "*.")
	if _, err := netip.ParseAddr(name); err == nil {
		return Rule{}, fmt.Errorf("entry %q: an address is not allowed, name the host", e)
	}
	if name == "" || strings.ContainsAny(name, "*/ @") || !strings.Contains(name, ".") {
		return Rule{}, fmt.Errorf("entry %q: want a host name (\"files.example.org\"), \"*.example.org\", either with \":port\", or a preset (%s)", e, strings.Join(presetNames(), ", "))
	}
	return Rule{Host: host, Port: port, From: e}, nil
}

func presetNames() []string { return []string{"crates", "go", "npm", "python"} }

// Match returns the rule allowing host:port.
func Match(rules []Rule, host string, port int) (Rule, bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, r := range rules {
		if r.Port == 0 && port != 80 && port != 443 || r.Port != 0 && r.Port != port {
			continue
		}
		if suf, ok := strings.CutPrefix(r.Host, "*"); ok {
			if strings.HasSuffix(host, suf) && len(host) > len(suf) {
				return r, true
			}
			continue
		}
		if r.Host == host {
			return r, true
		}
	}
	return Rule{}, false
}
