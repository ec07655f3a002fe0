package config

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// checker validates the decoded document and collects every problem.
type checker struct {
	file  string
	lines lineIndex
	// backends are the names [sandbox] backend accepts (Options.Backends).
	backends []string
	probs    []*Problem
	warnings []string
}

func (c *checker) add(path []string, msg, hint string) {
	c.probs = append(c.probs, &Problem{
		File: c.file,
		Line: c.lines.line(path),
		Key:  toml.Key(path).String(),
		Msg:  msg,
		Hint: hint,
	})
}

func (c *checker) wrongType(path []string, want string, v any) {
	c.add(path, fmt.Sprintf("expected %s, got %s", want, describe(v)), "")
}

// document fills f from the decoded root table.
func (c *checker) document(f *File, root map[string]any) {
	if m, ok := c.section(root, "project"); ok {
		f.Project = c.project(m)
	}
	if m, ok := c.section(root, "repro"); ok {
		f.Repro = c.repro(m)
	}
	if m, ok := c.section(root, "sandbox"); ok {
		c.sandboxSection(f, m)
	}
}

// section returns the top-level table name when the document has it.
func (c *checker) section(root map[string]any, name string) (map[string]any, bool) {
	v, ok := root[name]
	if !ok {
		return nil, false
	}
	return c.table([]string{name}, v)
}

// projectKeys and reproKeys are the keys triage-sandbox reads in the
// harness's [project] and [repro].
var (
	projectKeys = []string{"checkout", "python"}
	reproKeys   = []string{"timeout"}
)

// harnessTypos warns about each key of a harness-owned table that is a
// typo away from one we read (and not set beside it): the harness's own
// keys stay allowed, but `chekout` must not be ignored without a word.
func (c *checker) harnessTypos(table string, m map[string]any, ours []string) {
	for _, k := range sortedKeys(m) {
		if slices.Contains(ours, k) {
			continue
		}
		s := typoOf(k, ours)
		if _, set := m[s]; s == "" || set {
			continue
		}
		p := &Problem{File: c.file, Line: c.lines.line([]string{table, k}), Key: toml.Key([]string{table, k}).String(),
			Msg:  fmt.Sprintf("not a key triage-sandbox reads (the harness owns [%s]; the value is ignored)", table),
			Hint: fmt.Sprintf("did you mean %q?", s)}
		c.warnings = append(c.warnings, p.Error())
	}
}

// project reads the two keys of [project] the sandbox needs; the harness owns the rest.
func (c *checker) project(m map[string]any) Project {
	c.harnessTypos("project", m, projectKeys)
	var p Project
	if v, ok := m["checkout"]; ok {
		if s, ok := c.str([]string{"project", "checkout"}, v); ok {
			p.Checkout = s
		}
	}
	if v, ok := m["python"]; ok {
		if s, ok := c.str([]string{"project", "python"}, v); ok {
			p.Python = s
		}
	}
	return p
}

// repro reads the one key of [repro] the sandbox needs.
func (c *checker) repro(m map[string]any) Repro {
	c.harnessTypos("repro", m, reproKeys)
	var r Repro
	if v, ok := m["timeout"]; ok {
		r.Timeout = c.timeout([]string{"repro", "timeout"}, v)
	}
	return r
}

// sandboxSection reads [sandbox], then its per-role tables, [sandbox.guard]
// and [sandbox.mcp].
func (c *checker) sandboxSection(f *File, sb map[string]any) {
	f.Sandbox = c.sandbox([]string{"sandbox"}, sb, false)
	for _, name := range sandboxTables {
		v, ok := sb[name]
		if !ok {
			continue
		}
		p := []string{"sandbox", name}
		m, ok := c.table(p, v)
		if !ok {
			continue
		}
		switch name {
		case string(profiles.RoleAgent):
			f.Agent = c.sandbox(p, m, true)
		case string(profiles.RoleReproducer):
			f.Reproducer = c.sandbox(p, m, true)
		case "guard":
			f.Guard = c.guard(p, m)
		case "mcp":
			f.MCP = c.mcp(p, m)
		}
	}
}

// sandbox reads [sandbox] (role false) or a per-role table (role true).
// Every key must be known; a bad key or value leaves its field unset.
func (c *checker) sandbox(base []string, m map[string]any, role bool) Sandbox {
	var sb Sandbox
	for _, k := range sortedKeys(m) {
		if key, ok := lookup(sandboxKeys, k); ok {
			key.read(c, concat(base, []string{k}), m[k], &sb)
		} else {
			c.notSandboxKey(base, k, m[k], role)
		}
	}
	return sb
}

// notSandboxKey reports an entry of [sandbox] or a per-role table that is
// not a key: a table [sandbox] holds is read by its caller, anything else is
// unknown.
func (c *checker) notSandboxKey(base []string, k string, v any, role bool) {
	_, isTable := v.(map[string]any)
	switch {
	case role && isTable:
		c.nestedTable(base, k)
	case !role && slices.Contains(sandboxTables, k):
		// read by sandboxSection
	case role:
		c.add(concat(base, []string{k}), "unknown key", unknownKeyHint(k, keyNames(sandboxKeys)))
	case suggest(k, keyNames(sandboxKeys)) != "":
		// A key's slip names a key, before a table a short name is also
		// close to (mem: memory, not mcp).
		c.add(concat(base, []string{k}), "unknown key", unknownKeyHint(k, keyNames(sandboxKeys)))
	default:
		c.add(concat(base, []string{k}), "unknown key", unknownKeyHint(k, append(keyNames(sandboxKeys), sandboxTables...)))
	}
}

// nestedTable reports a table inside a per-role table: roles only override
// [sandbox] keys, they do not nest.
func (c *checker) nestedTable(base []string, k string) {
	hint := "a per-role table only overrides [sandbox] keys"
	if slices.Contains(sandboxTables, k) {
		hint = fmt.Sprintf("move it to [sandbox.%s]", k)
	} else if s := suggest(k, keyNames(sandboxKeys)); s != "" {
		hint = fmt.Sprintf("did you mean %q?", s)
	}
	c.add(concat(base, []string{k}), fmt.Sprintf("nested table not allowed in [%s]", toml.Key(base)), hint)
}

// guard reads [sandbox.guard].
func (c *checker) guard(base []string, m map[string]any) Guard {
	var g Guard
	for _, k := range sortedKeys(m) {
		p := concat(base, []string{k})
		if key, ok := lookup(guardKeys, k); ok {
			key.read(c, p, m[k], &g)
		} else {
			c.add(p, "unknown key", unknownKeyHint(k, keyNames(guardKeys)))
		}
	}
	return g
}

// mcp reads [sandbox.mcp].
func (c *checker) mcp(base []string, m map[string]any) MCP {
	var out MCP
	for _, k := range sortedKeys(m) {
		p := concat(base, []string{k})
		if key, ok := lookup(mcpKeys, k); ok {
			key.read(c, p, m[k], &out)
		} else {
			c.add(p, "unknown key", unknownKeyHint(k, keyNames(mcpKeys)))
		}
	}
	return out
}

// Parsers of the key table: each reports what is wrong and returns nil.

// backend reads a backend name the caller knows.
func (c *checker) backend(p []string, v any) *string {
	s, ok := c.str(p, v)
	if !ok {
		return nil
	}
	if len(c.backends) > 0 && !slices.Contains(c.backends, s) {
		c.add(p, fmt.Sprintf("unknown backend %q", s), "use one of "+quoteList(c.backends))
		return nil
	}
	return &s
}

// intIn reads an integer within lo..hi; unit follows the bounds in the message.
func intIn(lo, hi int64, unit, hint string) parser[*int64] {
	return func(c *checker, p []string, v any) *int64 {
		n, ok := c.integer(p, v)
		if !ok {
			return nil
		}
		if n < lo || n > hi {
			c.add(p, fmt.Sprintf("must be between %d and %d%s, got %d", lo, hi, unit, n), hint)
			return nil
		}
		return &n
	}
}

// asInt stores what parse accepts as an int (its range fits any int).
func asInt(parse parser[*int64]) parser[*int] {
	return func(c *checker, p []string, v any) *int {
		n := parse(c, p, v)
		if n == nil {
			return nil
		}
		i := int(*n)
		return &i
	}
}

// numberIn reads an integer or float within lo..hi (NaN is outside).
func numberIn(lo, hi float64, hint string) parser[*float64] {
	return func(c *checker, p []string, v any) *float64 {
		f, ok := c.number(p, v)
		if !ok {
			return nil
		}
		if !(f >= lo && f <= hi) {
			c.add(p, fmt.Sprintf("must be between %v and %v, got %v", lo, hi, f), hint)
			return nil
		}
		return &f
	}
}

// stringWhere reads a string that check accepts (check returns "" or what
// is wrong and what to do).
func stringWhere(check func(string) (msg, hint string)) parser[*string] {
	return func(c *checker, p []string, v any) *string {
		s, ok := c.str(p, v)
		if !ok {
			return nil
		}
		if msg, hint := check(s); msg != "" {
			c.add(p, msg, hint)
			return nil
		}
		return &s
	}
}

// stringsWhere reads an array of strings, each of which check accepts.
func stringsWhere(check func(string) (msg, hint string)) parser[[]string] {
	return func(c *checker, p []string, v any) []string { return c.stringList(p, v, check) }
}

// capabilities reads names of capabilities a backend may lack.
func capabilities(c *checker, p []string, v any) []profiles.Capability {
	names := c.stringList(p, v, checkCapability)
	if names == nil {
		return nil
	}
	out := make([]profiles.Capability, len(names))
	for i, n := range names {
		out[i] = profiles.Capability(n)
	}
	return out
}

// Typed accessors: each reports a wrong type and returns ok=false (or nil).

func (c *checker) table(p []string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.wrongType(p, "a table", v)
	}
	return m, ok
}

func (c *checker) str(p []string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		c.wrongType(p, "a string", v)
	}
	return s, ok
}

func (c *checker) boolean(p []string, v any) *bool {
	b, ok := v.(bool)
	if !ok {
		c.wrongType(p, "a boolean", v)
		return nil
	}
	return &b
}

func (c *checker) integer(p []string, v any) (int64, bool) {
	n, ok := v.(int64)
	if !ok {
		c.wrongType(p, "an integer", v)
	}
	return n, ok
}

func (c *checker) number(p []string, v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	c.wrongType(p, "a number", v)
	return 0, false
}

// size reads a byte count or a string such as "512m".
func (c *checker) size(p []string, v any) *int64 {
	const hint = `write a byte count or a size such as "512m" or "2g"`
	switch s := v.(type) {
	case int64:
		if s <= 0 {
			c.add(p, fmt.Sprintf("size must be greater than zero, got %d", s), hint)
			return nil
		}
		return &s
	case string:
		n, err := ParseSize(s)
		if err != nil {
			c.add(p, err.Error(), hint)
			return nil
		}
		return &n
	}
	c.wrongType(p, "a size", v)
	return nil
}

// sizeAtLeast reads a size no smaller than least: below it a unit was
// most likely forgotten (memory = 2 is two bytes), and the runtime would
// refuse it later with a message naming no key.
func sizeAtLeast(least int64, example string) parser[*int64] {
	return func(c *checker, p []string, v any) *int64 {
		n := c.size(p, v)
		if n == nil || *n >= least {
			return n
		}
		what := fmt.Sprintf("%v", v)
		if s, ok := v.(string); ok {
			what = quoteShort(s)
		}
		unit := ""
		if !hasUnit(v) {
			unit = " (a size without a unit is a byte count)"
		}
		c.add(p, fmt.Sprintf("%s = %s is %s%s, below the %s minimum", p[len(p)-1], what, formatSize(*n), unit, formatSize(least)),
			fmt.Sprintf("write e.g. %q", example))
		return nil
	}
}

// hasUnit: the value was written with a unit ("512m", not 512 or "512").
func hasUnit(v any) bool {
	s, ok := v.(string)
	return ok && strings.TrimRight(strings.TrimSpace(s), "0123456789.") != ""
}

// formatSize shows n in the largest unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// stringList reads an array of strings, checking each item with check (which
// returns "" or what is wrong). Any bad item leaves the whole list unset; an
// empty array is kept as an empty, non-nil slice since it overrides.
func (c *checker) stringList(p []string, v any, check func(string) (msg, hint string)) []string {
	items, ok := v.([]any)
	if !ok {
		c.wrongType(p, "an array of strings", v)
		return nil
	}
	out := make([]string, 0, len(items))
	bad := false
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			c.add(p, fmt.Sprintf("item %d: expected a string, got %s", i+1, describe(it)), "")
			bad = true
			continue
		}
		if msg, hint := check(s); msg != "" {
			c.add(p, fmt.Sprintf("item %d: %s", i+1, msg), hint)
			bad = true
			continue
		}
		out = append(out, s)
	}
	if bad {
		return nil
	}
	return out
}

// setEnv reads a table of fixed variables.
func (c *checker) setEnv(p []string, v any) map[string]string {
	m, ok := c.table(p, v)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	bad := false
	for _, k := range sortedKeys(m) {
		kp := concat(p, []string{k})
		if !isEnvName(k) {
			c.add(kp, fmt.Sprintf("%s is not a valid variable name", quoteShort(k)), "use letters, digits and _, not starting with a digit")
			bad = true
			continue
		}
		s, ok := c.str(kp, m[k])
		if !ok {
			bad = true
			continue
		}
		out[k] = s
	}
	if bad {
		return nil
	}
	return out
}

func anyString(string) (string, string) { return "", "" }

// oneOf accepts exactly one of values.
func oneOf(values ...string) func(string) (string, string) {
	return func(s string) (string, string) {
		if slices.Contains(values, s) {
			return "", ""
		}
		return fmt.Sprintf("%q is not one of %s", s, quoteList(values)), "write one of " + quoteList(values)
	}
}

func checkImage(s string) (string, string) {
	if strings.TrimSpace(s) == "" {
		return "must not be empty", "name a docker image or remove the key"
	}
	return "", ""
}

// checkNamespace accepts a Kubernetes namespace name: an RFC 1123 label
// (no regexp: nothing is compiled at start-up).
func checkNamespace(s string) (string, string) {
	ok := len(s) > 0 && len(s) <= 63 && s[0] != '-' && s[len(s)-1] != '-'
	for _, r := range s {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	}
	if !ok {
		return fmt.Sprintf("%q is not a Kubernetes namespace name", s), "use lower-case letters, digits and '-', at most 63, e.g. \"triage\""
	}
	return "", ""
}

func checkUserKey(s string) (string, string) {
	if msg := checkUser(s); msg != "" {
		return msg, `write it as "uid:gid" with a non-root uid, e.g. "1000:1000"`
	}
	return "", ""
}

func checkNonEmpty(s string) (string, string) {
	if s == "" {
		return "must not be empty", ""
	}
	return "", ""
}

// checkCapability accepts the name of a capability a backend may lack.
func checkCapability(s string) (string, string) {
	for _, c := range profiles.Capabilities() {
		if string(c) == s {
			return "", ""
		}
	}
	var names []string
	for _, c := range profiles.Capabilities() {
		names = append(names, string(c))
	}
	return fmt.Sprintf("unknown capability %s", quoteShort(s)), "use one of " + quoteList(names)
}

// checkRelative accepts a path inside the workspace root. Whether it resolves
// inside once symlinks are followed is for policy to check on the real tree.
func checkRelative(s string) (string, string) {
	switch {
	case s == "":
		return "must not be empty", ""
	case filepath.IsAbs(s) || strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`):
		return fmt.Sprintf("%s must be relative to the workspace root", quoteShort(s)),
			"write it relative to the directory holding triage.toml"
	case strings.HasPrefix(s, "~"):
		return fmt.Sprintf("%s must be relative to the workspace root", quoteShort(s)),
			`"~" is not expanded; write it relative to the directory holding triage.toml`
	}
	if c := path.Clean(filepath.ToSlash(s)); c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Sprintf("%s is outside the workspace root", quoteShort(s)),
			"writable paths must stay inside the directory holding triage.toml"
	}
	return "", ""
}

// checkEnvPattern accepts a variable name or a shell wildcard over names,
// e.g. PIXI_* or LC_[A-Z]*.
func checkEnvPattern(s string) (string, string) {
	const hint = "use letters, digits, _ and the wildcards * ? [...]"
	bad := fmt.Sprintf("%s is not a variable name or wildcard pattern", quoteShort(s))
	if s == "" {
		return "must not be empty", hint
	}
	inClass := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case isNameByte(ch), ch == '*', ch == '?':
		case ch == '[':
			inClass = true
		case ch == ']':
			inClass = false
		case inClass && (ch == '-' || ch == '^'):
			// ranges and negation inside a class, as path.Match has them
		default:
			return bad, hint
		}
	}
	if _, err := path.Match(s, ""); err != nil {
		return bad, hint
	}
	return "", ""
}

// checkUser accepts "uid:gid" with a non-root uid.
func checkUser(s string) string {
	uid, gid, ok := strings.Cut(s, ":")
	if !ok {
		return fmt.Sprintf("%s is not of the form \"uid:gid\"", quoteShort(s))
	}
	u, err1 := strconv.ParseUint(uid, 10, 32)
	_, err2 := strconv.ParseUint(gid, 10, 32)
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("%s: uid and gid must be non-negative integers", quoteShort(s))
	}
	if u == 0 {
		return "uid 0 (root) is not allowed"
	}
	return ""
}

func isNameByte(ch byte) bool {
	return ch == '_' || ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9'
}

func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// describe names a decoded TOML value for a type-mismatch message.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return "string " + quoteShort(x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("float %v", x)
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case time.Time:
		return "datetime " + x.Format(time.RFC3339Nano)
	case map[string]any:
		return "table"
	case []map[string]any:
		return "array of tables"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// quoteShort quotes s, cut to a length that keeps a message readable.
func quoteShort(s string) string {
	const maxRunes = 40
	if utf8.RuneCountInString(s) <= maxRunes {
		return strconv.Quote(s)
	}
	r := []rune(s)
	return strconv.Quote(string(r[:maxRunes])) + "…"
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// network reads `network`: a boolean, or a list of allow-list entries,
// each parsed here so a bad one is refused at load with its item number.
func (c *checker) network(p []string, v any) *Network {
	switch x := v.(type) {
	case bool:
		return &Network{On: x}
	case []any:
		entries := c.stringList(p, x, checkAllowEntry)
		if entries == nil {
			return nil
		}
		return &Network{List: true, Allow: entries}
	}
	c.add(p, fmt.Sprintf("expected a boolean or an array of allow-list entries, got %s", describe(v)),
		`e.g. network = false, or network = ["python", "files.example.org:443"]`)
	return nil
}

// checkAllowEntry is the allow-list parser's verdict on one entry.
func checkAllowEntry(s string) (string, string) {
	_, err := allow.Parse([]string{s})
	if err == nil {
		return "", ""
	}
	// The parser's reason already says what to write instead.
	var e *allow.EntryError
	if errors.As(err, &e) {
		return fmt.Sprintf("entry %s: %s", strconv.QuoteToASCII(e.Entry), e.Reason), ""
	}
	return err.Error(), "write a host name, \"*.\" and a domain, either with \":port\", or a preset: " + strings.Join(slices.Sorted(maps.Keys(allow.Presets())), ", ")
}

// brokerKeys are the keys of one [sandbox.<role>.broker.NAME] table.
var brokerKeys = []string{"hosts", "methods"}

// brokers reads `broker`: a table of secrets by variable name, each with
// its hosts (names, checked against the allow-list when the policy is
// built) and methods.
func (c *checker) brokers(p []string, v any) map[string]Broker {
	m, ok := c.table(p, v)
	if !ok {
		return nil
	}
	out := make(map[string]Broker, len(m))
	bad := false
	for _, name := range sortedKeys(m) {
		bp := concat(p, []string{name})
		if !isEnvName(name) {
			c.add(bp, fmt.Sprintf("%s is not a variable name", quoteShort(name)), "name the variable holding the secret, e.g. [sandbox.reproducer.broker.GH_TOKEN]")
			bad = true
			continue
		}
		t, ok := c.table(bp, m[name])
		if !ok {
			bad = true
			continue
		}
		var b Broker
		for _, k := range sortedKeys(t) {
			kp := concat(bp, []string{k})
			switch k {
			case "hosts":
				b.Hosts = c.stringList(kp, t[k], checkBrokerHost)
				if b.Hosts == nil {
					bad = true
				}
			case "methods":
				b.Methods = c.stringList(kp, t[k], checkMethod)
				if b.Methods == nil {
					bad = true
				}
				for i, m := range b.Methods {
					b.Methods[i] = strings.ToUpper(m)
				}
			default:
				c.add(kp, "unknown key", unknownKeyHint(k, brokerKeys))
				bad = true
			}
		}
		if _, set := t["hosts"]; !set {
			c.add(bp, "no hosts", `name the hosts the secret is sent to, e.g. hosts = ["api.github.com"]`)
			bad = true
		} else if b.Hosts != nil && len(b.Hosts) == 0 {
			c.add(concat(bp, []string{"hosts"}), "empty", `name the hosts the secret is sent to, e.g. hosts = ["api.github.com"]`)
			bad = true
		}
		if b.Methods == nil {
			b.Methods = []string{"GET", "HEAD"}
		} else if len(b.Methods) == 0 {
			c.add(concat(bp, []string{"methods"}), "empty", `name the methods, e.g. methods = ["GET", "HEAD"], or remove the key for those two`)
			bad = true
		}
		out[name] = b
	}
	if bad {
		return nil
	}
	return out
}

// checkBrokerHost accepts a host name (no wildcard, port or address): a
// secret is bound to names exactly.
func checkBrokerHost(s string) (string, string) {
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return fmt.Sprintf("%s is an address", quoteShort(s)), "write the host's name"
	}
	if _, err := allow.Normalize(s); err != nil || strings.ContainsAny(s, "*:/") {
		return fmt.Sprintf("%s is not a host name", quoteShort(s)), "write a name such as \"api.github.com\" (no wildcard, port or URL)"
	}
	return "", ""
}

// checkMethod accepts an HTTP method a secret may go with.
func checkMethod(s string) (string, string) {
	u := strings.ToUpper(s)
	if u == "" || u == "CONNECT" || strings.Trim(u, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return fmt.Sprintf("%s is not an HTTP method a secret can be bound to", quoteShort(s)), `e.g. methods = ["GET", "HEAD"]`
	}
	return "", ""
}
