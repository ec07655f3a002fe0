package hints

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Refusal is a connection the network proxy refused.
type Refusal struct {
	Host   string
	Port   int
	Reason string
}

// maxEgressHints bounds the hints from refusals: a command may try a
// thousand names, the operator needs the first few.
const maxEgressHints = 5

// Egress says, for each host the proxy refused (once per host and port),
// why and the entry of the config key that would allow it; an address, or
// a name the list allows but that resolved somewhere refused, no list
// entry can allow, and the hint says so.
func Egress(p *policy.Policy, refused []Refusal) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range refused {
		host := output.Line(r.Host)
		k := host + ":" + strconv.Itoa(r.Port)
		if seen[k] {
			continue
		}
		seen[k] = true
		if len(out) == maxEgressHints {
			out = append(out, "more connections were refused: see \"network\" in --json or the audit log")
			break
		}
		why := output.Line(r.Reason)
		if why == "" {
			why = "refused"
		}
		entry := strconv.Quote(host)
		if r.Port != 80 && r.Port != 443 {
			entry = strconv.Quote(host + ":" + strconv.Itoa(r.Port))
		}
		_, listed := allow.Match(p.Network.Rules, r.Host, r.Port)
		switch _, err := netip.ParseAddr(host); {
		case host == "":
			// Refused before its target was read (no credentials, too many
			// connections): no entry of the list is at stake.
			out = append(out, fmt.Sprintf("the network proxy refused a request (%s)", why))
		case err == nil:
			out = append(out, fmt.Sprintf("the network proxy refused %s (%s): an address cannot be allowed, only a host name in %s", k, why, p.Network.Key))
		case strings.HasPrefix(r.Reason, "brokered ") && brokerKey(p, r.Host) != "":
			out = append(out, fmt.Sprintf("the network proxy refused %s (%s): the methods and hosts the secret goes with are set in %s", k, why, brokerKey(p, r.Host)))
		case !listed:
			out = append(out, fmt.Sprintf("the network proxy refused %s (%s): add %s to %s to allow it", k, why, entry, p.Network.Key))
		default:
			out = append(out, fmt.Sprintf("the network proxy refused %s (%s): no entry of %s allows that", k, why, p.Network.Key))
		}
	}
	return out
}

// brokerKey is the config table of the secret brokered to host, or "".
func brokerKey(p *policy.Policy, host string) string {
	for _, b := range p.Network.Brokers {
		if slices.Contains(b.Hosts, host) {
			return b.Key
		}
	}
	return ""
}
