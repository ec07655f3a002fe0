// Package allow is the network allow-list: the entries a role's `network`
// key may hold (host names, *.suffix wildcards, :port, named presets for
// the common package indexes), parsed and matched. It has no I/O; the host
// side proxy (package egress) decides each connection with it.
//
// API agreed between the helpers building issue 36 (implementation may grow,
// these names stay):
//
//	type Rule struct {
//		Host string // lower case, no trailing dot; "*.example.org" matches below example.org only
//		Port int    // 0: 80 and 443
//		From string // the config entry or "preset <name>" it came from, for decisions and hints
//	}
//	func Parse(entries []string) ([]Rule, error) // presets expanded; an error names the entry and what to do
//	func Presets() map[string][]string           // preset name -> its entries (python, npm, go, crates)
//	func Match(rules []Rule, host string, port int) (Rule, bool)
//
// Added beside them: Normalize (the one spelling of a host name that Match
// and the proxy compare) and EntryError (the error of one bad entry, so a
// config loader can add file and line).
package allow

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Rule is one allowed host (or *.suffix) and port.
type Rule struct {
	Host string // lower case, no trailing dot; "*.example.org" matches below example.org only
	Port int    // 0: 80 and 443
	From string // the config entry or "preset <name>" it came from, for decisions and hints
}

// presets are written from each ecosystem's documented defaults, HTTPS
// only: pip's index https://pypi.org/simple and the files it links to on
// files.pythonhosted.org; npm's registry https://registry.npmjs.org/; the
// go command's GOPROXY=https://proxy.golang.org,direct and
// GOSUMDB=sum.golang.org (no "direct": that would be every VCS host);
// cargo's sparse index https://index.crates.io/ whose config.json sends
// downloads to https://static.crates.io/crates.
var presets = map[string][]string{
	"python": {"pypi.org:443", "files.pythonhosted.org:443"},
	"npm":    {"registry.npmjs.org:443"},
	"go":     {"proxy.golang.org:443", "sum.golang.org:443"},
	"crates": {"index.crates.io:443", "static.crates.io:443"},
}

// Presets returns each preset's name and its entries (a copy).
func Presets() map[string][]string {
	out := make(map[string][]string, len(presets))
	for name, entries := range presets {
		out[name] = slices.Clone(entries)
	}
	return out
}

func presetNames() string {
	names := make([]string, 0, len(presets))
	for name := range presets {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// EntryError is what is wrong with one entry of the list.
type EntryError struct {
	Index  int    // 0-based position in the list given to Parse
	Entry  string // as given
	Reason string // what is wrong and what to write instead
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("network entry %d %s: %s", e.Index+1, strconv.QuoteToASCII(clip(e.Entry)), e.Reason)
}

// clip keeps an error line short whatever the entry's length.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// Parse turns the entries of a `network` list into rules, presets expanded,
// duplicates dropped. Every bad entry is reported (errors.Join of
// *EntryError), none is skipped.
func Parse(entries []string) ([]Rule, error) {
	var rules []Rule
	var errs []error
	seen := map[[2]string]bool{}
	for i, entry := range entries {
		got, reason := parseEntry(entry)
		if reason != "" {
			errs = append(errs, &EntryError{Index: i, Entry: entry, Reason: reason})
			continue
		}
		for _, r := range got {
			key := [2]string{r.Host, strconv.Itoa(r.Port)}
			if !seen[key] {
				seen[key] = true
				rules = append(rules, r)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

// parseEntry returns the rules of one entry, or why it is refused.
func parseEntry(entry string) ([]Rule, string) {
	if entry == "" {
		return nil, "empty; write a host name such as \"pkgs.example.org\" or a preset (" + presetNames() + ")"
	}
	if strings.ContainsFunc(entry, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, "contains a space or control character; write one host name per entry"
	}
	if strings.Contains(entry, "://") || strings.ContainsAny(entry, "/?#@") {
		return nil, "is not a host name (no scheme, path or user); write only the host, e.g. \"pkgs.example.org\" or \"pkgs.example.org:443\""
	}
	if p, ok := presets[entry]; ok {
		rules := make([]Rule, 0, len(p))
		for _, e := range p {
			r, reason := parseHostPort(e)
			if reason != "" {
				panic("allow: preset " + entry + ": " + reason) // a bug in the table above
			}
			r.From = "preset " + entry
			rules = append(rules, r)
		}
		return rules, ""
	}
	if name, _, ok := strings.Cut(entry, ":"); ok {
		if _, isPreset := presets[name]; isPreset {
			return nil, "a preset takes no port; write " + strconv.Quote(name) + " alone"
		}
	}
	r, reason := parseHostPort(entry)
	if reason != "" {
		return nil, reason
	}
	r.From = entry
	return []Rule{r}, ""
}

// parseHostPort parses "host", "host:port", "*.suffix" or "*.suffix:port".
func parseHostPort(entry string) (Rule, string) {
	if strings.ContainsAny(entry, "[]") {
		return Rule{}, "is an IP address; the list takes host names only (the proxy resolves them and refuses private addresses)"
	}
	host, port := entry, 0
	if i := strings.LastIndexByte(entry, ':'); i >= 0 {
		if _, err := netip.ParseAddr(entry); err == nil {
			return Rule{}, "is an IP address; the list takes host names only (the proxy resolves them and refuses private addresses)"
		}
		host = entry[:i]
		p, reason := parsePort(entry[i+1:])
		if reason != "" {
			return Rule{}, reason
		}
		port = p
	}
	wild := false
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		wild, host = true, rest
	}
	if host == "*" || host == "" && wild {
		return Rule{}, "\"*\" alone would allow every host; name the hosts, or use \"*.example.org\""
	}
	if strings.Contains(host, "*") {
		return Rule{}, "a wildcard is allowed only as a whole first label, as in \"*.example.org\""
	}
	name, reason := normalize(host)
	if reason != "" {
		return Rule{}, reason
	}
	if !strings.Contains(name, ".") {
		if wild {
			return Rule{}, "\"*." + name + "\" would allow a whole top-level domain; name a domain below it"
		}
		return Rule{}, "is neither a preset (" + presetNames() + ") nor a dotted host name"
	}
	if wild {
		name = "*." + name
	}
	return Rule{Host: name, Port: port}, ""
}

func parsePort(s string) (int, string) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" || s[0] == '0' {
		return 0, "port " + strconv.QuoteToASCII(clip(s)) + " is not a number from 1 to 65535"
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, "port " + strconv.QuoteToASCII(s) + " is not a number from 1 to 65535"
	}
	return p, ""
}

// profile maps a name as a DNS lookup would (lower case, NFC, IDNA 2008
// with UTS 46), refuses what DNS cannot carry and checks lengths.
var profile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.ValidateLabels(true),
	idna.StrictDomainName(true),
	idna.VerifyDNSLength(true),
)

// Normalize returns the one spelling of a host name that rules hold and
// Match compares: ASCII (IDNA A-labels), lower case, no trailing dot. It
// refuses IP literals, empty labels and names DNS cannot carry.
func Normalize(host string) (string, error) {
	name, reason := normalize(host)
	if reason != "" {
		return "", fmt.Errorf("host %s: %s", strconv.QuoteToASCII(clip(host)), reason)
	}
	return name, nil
}

func normalize(host string) (string, string) {
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", "is empty; write a host name such as \"pkgs.example.org\""
	}
	if !utf8.ValidString(host) {
		return "", "is not valid UTF-8"
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return "", "is an IP address; the list takes host names only (the proxy resolves them and refuses private addresses)"
	}
	if strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
		return "", "has an empty label (\"..\" or a leading dot); write the host name without it"
	}
	name, err := profile.ToASCII(host)
	if err != nil {
		return "", "is not a valid host name (" + err.Error() + ")"
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.TrimLeft(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
			l[0] == '-' || l[len(l)-1] == '-' {
			return "", "is not a valid host name (label " + strconv.QuoteToASCII(clip(l)) + ")"
		}
	}
	// A numeric last label makes the name an IPv4 address to inet_aton and
	// to URL parsers ("127.1", "0x7f.1"): refused like an IP literal.
	last := labels[len(labels)-1]
	if strings.TrimLeft(last, "0123456789") == "" || strings.HasPrefix(last, "0x") &&
		strings.TrimLeft(last[2:], "0123456789abcdef") == "" {
		return "", "ends in a number, which resolvers read as an IPv4 address; the list takes host names only"
	}
	return name, ""
}

// Match returns the first rule that allows host:port. host is normalised
// first; a name that cannot be normalised matches nothing.
func Match(rules []Rule, host string, port int) (Rule, bool) {
	name, reason := normalize(host)
	if reason != "" {
		return Rule{}, false
	}
	for _, r := range rules {
		if matchHost(r.Host, name) && matchPort(r.Port, port) {
			return r, true
		}
	}
	return Rule{}, false
}

func matchHost(pattern, name string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(name, "."+suffix)
	}
	return pattern == name
}

func matchPort(rulePort, port int) bool {
	if rulePort == 0 {
		return port == 80 || port == 443
	}
	return rulePort == port
}

// OnSomePort says whether host is allowed on some port of rules (a rule
// without a port is asked about 443).
func OnSomePort(rules []Rule, host string) bool {
	for _, r := range rules {
		port := r.Port
		if port == 0 {
			port = 443
		}
		if _, ok := Match(rules, host, port); ok {
			return true
		}
	}
	return false
}
