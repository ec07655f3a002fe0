package config

import (
	"fmt"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Keys accepted in [sandbox] and in each per-role table.
var sandboxKeys = []string{
	"backend", "network", "image", "env", "secrets", "writable", "allow_all", "set_env",
	"timeout", "memory", "cpus", "pids", "tmpfs_size", "shm_size", "file_size", "writable_size", "writable_inodes", "runtime", "user",
	"output_limit", "output_ceiling", "deny", "confirm", "gate_disable", "gate_confirm", "allow_dynamic", "audit_log", "accept_weaker", "allow_tool_config", "read_only",
	"pool", "warm_idle",
}

// Tables [sandbox] may hold besides its keys.
var sandboxTables = []string{string(profiles.RoleAgent), string(profiles.RoleReproducer), "guard"}

// Keys accepted in [sandbox.guard].
var guardKeys = []string{"enabled", "model", "min_safe", "max_risk", "url", "timeout", "command", "api_key_env"}

// maxPool bounds [sandbox] pool: each warm sandbox holds its memory.
const maxPool = 16

// Values [sandbox] backend accepts.
var backends = []string{"docker", "oci", "seatbelt", "local"}

// checker validates the decoded document and collects every problem.
type checker struct {
	file  string
	lines lineIndex
	probs []*Problem
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
	if v, ok := root["project"]; ok {
		if m, ok := c.table([]string{"project"}, v); ok {
			f.Project = c.project(m)
		}
	}
	if v, ok := root["repro"]; ok {
		if m, ok := c.table([]string{"repro"}, v); ok {
			if t, ok := m["timeout"]; ok {
				f.Repro.Timeout = c.timeout([]string{"repro", "timeout"}, t)
			}
		}
	}
	v, ok := root["sandbox"]
	if !ok {
		return
	}
	sb, ok := c.table([]string{"sandbox"}, v)
	if !ok {
		return
	}
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
		}
	}
}

// project reads the two keys of [project] the sandbox needs; the harness owns the rest.
func (c *checker) project(m map[string]any) Project {
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

// sandbox reads [sandbox] (role false) or a per-role table (role true).
// Every key must be known; a bad key or value leaves its field unset.
func (c *checker) sandbox(base []string, m map[string]any, role bool) Sandbox {
	var sb Sandbox
	for _, k := range sortedKeys(m) {
		v := m[k]
		p := concat(base, []string{k})
		switch k {
		case "backend":
			if s, ok := c.str(p, v); ok {
				if slices.Contains(backends, s) {
					sb.Backend = &s
				} else {
					c.add(p, fmt.Sprintf("unknown backend %q", s), "use one of "+quoteList(backends))
				}
			}
		case "network":
			sb.Network = c.boolean(p, v)
		case "image":
			if s, ok := c.str(p, v); ok {
				if strings.TrimSpace(s) == "" {
					c.add(p, "must not be empty", "name a docker image or remove the key")
				} else {
					sb.Image = &s
				}
			}
		case "env":
			sb.Env = c.stringList(p, v, checkEnvPattern)
		case "secrets", "deny", "confirm", "gate_disable", "gate_confirm":
			l := c.stringList(p, v, checkNonEmpty)
			switch k {
			case "secrets":
				sb.Secrets = l
			case "deny":
				sb.Deny = l
			case "confirm":
				sb.Confirm = l
			case "gate_disable":
				sb.GateDisable = l
			case "gate_confirm":
				sb.GateConfirm = l
			}
		case "allow_dynamic":
			sb.AllowDynamic = c.boolean(p, v)
		case "writable":
			sb.Writable = c.stringList(p, v, checkRelative)
		case "read_only":
			sb.ReadOnly = c.stringList(p, v, checkNonEmpty)
		case "allow_tool_config":
			sb.AllowToolConfig = c.stringList(p, v, checkRelative)
		case "accept_weaker":
			for _, name := range c.stringList(p, v, checkCapability) {
				sb.AcceptWeaker = append(sb.AcceptWeaker, profiles.Capability(name))
			}
		case "allow_all":
			sb.AllowAll = c.boolean(p, v)
		case "set_env":
			sb.SetEnv = c.setEnv(p, v)
		case "timeout":
			sb.Timeout = c.timeout(p, v)
		case "memory":
			sb.Memory = c.size(p, v)
		case "file_size":
			sb.FileSize = c.size(p, v)
		case "tmpfs_size":
			sb.TmpfsSize = c.size(p, v)
		case "writable_size":
			sb.WritableSize = c.size(p, v)
		case "writable_inodes":
			if n, ok := c.integer(p, v); ok {
				if n >= 64 && n <= 1<<24 {
					sb.WritableInodes = &n
				} else {
					c.add(p, fmt.Sprintf("must be between 64 and %d, got %d", 1<<24, n), "e.g. writable_inodes = 32768")
				}
			}
		case "shm_size":
			sb.ShmSize = c.size(p, v)
		case "output_limit":
			sb.OutputLimit = c.size(p, v)
		case "output_ceiling":
			sb.OutputCeiling = c.size(p, v)
		case "cpus":
			if f, ok := c.number(p, v); ok {
				// Runtimes apply no CPU quota below 0.01 (dockerd refuses it,
				// runc reads a zero quota as no limit).
				if f >= 0.01 && f <= 4096 && !math.IsInf(f, 0) {
					sb.CPUs = &f
				} else {
					c.add(p, fmt.Sprintf("must be between 0.01 and 4096, got %v", f), `e.g. cpus = 1.5`)
				}
			}
		case "pids":
			if n, ok := c.integer(p, v); ok {
				if n > 0 {
					sb.Pids = &n
				} else {
					c.add(p, fmt.Sprintf("must be greater than zero, got %d", n), "")
				}
			}
		case "runtime":
			if s, ok := c.str(p, v); ok {
				sb.Runtime = &s
			}
		case "pool":
			if n, ok := c.integer(p, v); ok {
				if n >= 1 && n <= maxPool {
					sb.Pool = &n
				} else {
					c.add(p, fmt.Sprintf("must be between 1 and %d, got %d", maxPool, n), "e.g. pool = 2 keeps two reproducer sandboxes ready")
				}
			}
		case "warm_idle":
			if n, ok := c.integer(p, v); ok {
				if n >= 10 && n <= 86400 {
					i := int(n)
					sb.WarmIdle = &i
				} else {
					c.add(p, fmt.Sprintf("must be between 10 and 86400 seconds, got %d", n), "e.g. warm_idle = 600")
				}
			}
		case "audit_log":
			if s, ok := c.str(p, v); ok {
				sb.AuditLog = &s
			}
		case "user":
			if s, ok := c.str(p, v); ok {
				if msg := checkUser(s); msg != "" {
					c.add(p, msg, `write it as "uid:gid" with a non-root uid, e.g. "1000:1000"`)
				} else {
					sb.User = &s
				}
			}
		default:
			_, isTable := v.(map[string]any)
			switch {
			case role && isTable:
				c.nestedTable(base, k)
			case !role && slices.Contains(sandboxTables, k):
				// read by the caller
			case role:
				c.add(p, "unknown key", unknownKeyHint(k, sandboxKeys))
			default:
				c.add(p, "unknown key", unknownKeyHint(k, append(slices.Clip(sandboxKeys), sandboxTables...)))
			}
		}
	}
	return sb
}

// nestedTable reports a table inside a per-role table: roles only override
// [sandbox] keys, they do not nest.
func (c *checker) nestedTable(base []string, k string) {
	hint := "a per-role table only overrides [sandbox] keys"
	if slices.Contains(sandboxTables, k) {
		hint = fmt.Sprintf("move it to [sandbox.%s]", k)
	} else if s := suggest(k, sandboxKeys); s != "" {
		hint = fmt.Sprintf("did you mean %q?", s)
	}
	c.add(concat(base, []string{k}), fmt.Sprintf("nested table not allowed in [%s]", toml.Key(base)), hint)
}

// guard reads [sandbox.guard].
func (c *checker) guard(base []string, m map[string]any) Guard {
	var g Guard
	for _, k := range sortedKeys(m) {
		v := m[k]
		p := concat(base, []string{k})
		switch k {
		case "enabled":
			g.Enabled = c.boolean(p, v)
		case "model":
			if s, ok := c.str(p, v); ok {
				g.Model = &s
			}
		case "url":
			if s, ok := c.str(p, v); ok {
				g.URL = &s
			}
		case "min_safe", "max_risk":
			f, ok := c.number(p, v)
			if !ok {
				continue
			}
			if !(f >= 0 && f <= 1) {
				c.add(p, fmt.Sprintf("must be between 0 and 1, got %v", f), "")
				continue
			}
			if k == "min_safe" {
				g.MinSafe = &f
			} else {
				g.MaxRisk = &f
			}
		case "timeout":
			g.Timeout = c.timeout(p, v)
		case "command":
			g.Command = c.stringList(p, v, checkNonEmpty)
		case "api_key_env":
			if s, ok := c.str(p, v); ok {
				g.APIKeyEnv = &s
			}
		default:
			c.add(p, "unknown key", unknownKeyHint(k, guardKeys))
		}
	}
	return g
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

func checkNonEmpty(s string) (string, string) {
	if s == "" {
		return "must not be empty", ""
	}
	return "", ""
}

// checkRelative accepts a path inside the workspace root. Whether it resolves
// inside once symlinks are followed is for policy to check on the real tree.
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
