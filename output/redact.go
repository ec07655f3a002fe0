package output

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Redaction coverage. A secret (Secret.Value) of at least MinSecretLen = 8
// bytes is replaced by <redacted:NAME> wherever one of these forms of it
// occurs in the output, whole and uninterrupted (however the command's
// writes split it, a value holding newlines included):
//
//   - the exact value, and the value reversed (by characters, as rev(1));
//   - hex, lower and upper case;
//   - URL-encoded as url.QueryEscape and url.PathEscape write it (%XX in
//     upper case);
//   - base64, standard and URL alphabets, with and without padding, of the
//     value alone;
//   - base64 of a larger blob that holds the value at any byte offset (0, 1
//     or 2 mod 3; e.g. `echo $SECRET | base64`, or the value inside a JSON
//     document that is then encoded): the characters of the encoding that
//     depend on the value alone are replaced, when they are at least 12;
//     that is every offset for values of 10 bytes or more, offset 0 only for
//     9-byte values, and for 8-byte values only the encoding of the value
//     alone. The one or two characters on either side, which also depend on
//     the neighbouring bytes, stay.
//
// Not caught, by design (no general solution; what is shown is then pieces
// of a secret, never the secret in one of the forms above):
//
//   - a value split by white space, a newline or any inserted character
//     (including base64 wrapped across lines, as base64(1) writes it), a
//     part of a value, or a value in another case;
//   - other transformations: base32, gzip, rot13, JSON or shell escaping,
//     lower-case %xx, and so on;
//   - values shorter than MinSecretLen, which are never redacted.
//
// Independently of the secrets, DefaultRules redact values by their shape
// (token formats, key = high-entropy value, PEM private key blocks). The
// stream's cuts (stream.go) never fall inside a run of token characters or
// an occurrence of a form above, so they never turn a secret into pieces.

// MinSecretLen is the shortest value redacted by exact match: shorter values
// ("1", "true", a port) would shred ordinary output.
const MinSecretLen = 8

// Secret is a value to redact by exact match, with the name shown instead.
type Secret struct {
	Name  string
	Value string
}

// Rule is a pattern-based redaction. Rules follow the shape of gitleaks'
// default rules (MIT), reduced to what can be matched line by line.
type Rule struct {
	Name string
	Re   *regexp.Regexp
	// Compile, when Re is nil, gives the regexp, compiled at the rule's
	// first use: most runs' output never reaches a rule's regexp, and a
	// command's start-up need not pay for compiling it.
	Compile func() *regexp.Regexp
	// Group, when > 0, redacts only that submatch (the value of key = value).
	Group int
	// Lits: the regexp can only match where one of these occurs; they let
	// most output skip the regexp entirely. FoldLits are matched without
	// regard to case, and the rule then runs only on the lines holding them.
	Lits     []string
	FoldLits []string
}

// mayMatch reports whether rule could match s (lower is s lower-cased).
func (r *Rule) mayMatch(s, lower string) bool {
	if len(r.Lits) == 0 && len(r.FoldLits) == 0 {
		return true
	}
	for _, l := range r.Lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	for _, l := range r.FoldLits {
		if strings.Contains(lower, l) {
			return true
		}
	}
	return false
}

// DefaultRules are the pattern pass: token formats whose shape alone marks
// them as secrets, and key = value assignments with a high-entropy value.
func DefaultRules() []Rule {
	return []Rule{
		{Name: "github-token", Lits: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
			Compile: lazyRegexp(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b`)},
		{Name: "github-pat", Lits: []string{"github_pat_"}, Compile: lazyRegexp(`\bgithub_pat_[A-Za-z0-9_]{22,255}\b`)},
		{Name: "anthropic-key", Lits: []string{"sk-ant-"}, Compile: lazyRegexp(`\bsk-ant-[A-Za-z0-9_\-]{20,}`)},
		{Name: "openai-key", Lits: []string{"sk-"}, Compile: lazyRegexp(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`)},
		{Name: "aws-access-key", Lits: []string{"A3T", "AKIA", "ASIA", "ABIA", "ACCA"},
			Compile: lazyRegexp(`\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`)},
		{Name: "slack-token", Lits: []string{"xox"}, Compile: lazyRegexp(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
		{Name: "jwt", Lits: []string{"eyJ"}, Compile: lazyRegexp(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
		{Name: "generic-secret", Group: 1, FoldLits: []string{"key", "secret", "token", "passw", "credential", "auth"},
			Compile: lazyRegexp(`(?i)(?:api[_-]?key|secret|token|passw(?:or)?d|credential|auth)[A-Za-z0-9_-]*["']?\s*[:=]\s*["']?([A-Za-z0-9_./+=\-]{16,})`)},
	}
}

// lazyRegexp compiles pattern once, at its first use.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

// regexp is the rule's regexp.
func (r *Rule) regexp() *regexp.Regexp {
	if r.Re != nil || r.Compile == nil {
		return r.Re
	}
	return r.Compile()
}

// Redactor replaces secrets in text. It is immutable and safe to share.
type Redactor struct {
	// replacer is built at the first text that may hold a needle: a
	// command with no output (or none near a secret) never pays for it.
	replacer func() *strings.Replacer
	filter   needleFilter
	rules    []Rule
	// needles are the exact forms of the secrets, longest first; the stream
	// keeps its cuts out of them. nlNeedles are those holding a newline.
	needles, nlNeedles []string
	// maxNeedle is the longest exact needle: a streaming caller must hold
	// back that many bytes minus one to catch a secret split across writes.
	maxNeedle int
	// secrets are what it was built from, for With.
	secrets []Secret
}

// minMiddle is the shortest base64 middle part redacted (see secretForms):
// shorter ones would match unrelated base64 too often.
const minMiddle = 12

// secretForms returns the forms of v that are redacted (see the coverage
// note at the top of this file): none when v is shorter than MinSecretLen.
func secretForms(v string) []string {
	if len(v) < MinSecretLen {
		return nil
	}
	b := []byte(v)
	forms := []string{
		v, reverse(v),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
		url.QueryEscape(v), url.PathEscape(v),
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		forms = append(forms, enc.EncodeToString(b))
	}
	for off := 0; off < 3; off++ {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			if m := base64Middle(enc, b, off); len(m) >= minMiddle {
				forms = append(forms, m)
			}
		}
	}
	out := forms[:0]
	for _, f := range forms {
		if len(f) >= MinSecretLen {
			out = append(out, f)
		}
	}
	return out
}

// base64Middle is the part of the encoding of a blob holding v at byte
// offset off (mod 3) that depends on v alone: the characters whose 6 bits
// all come from v's bytes.
func base64Middle(enc *base64.Encoding, v []byte, off int) string {
	blob := make([]byte, off+len(v))
	copy(blob[off:], v)
	e := enc.EncodeToString(blob)
	return e[(8*off+5)/6 : 8*(off+len(v))/6]
}

// reverse reverses s by characters (by bytes if it is not UTF-8).
func reverse(s string) string {
	if !utf8.ValidString(s) {
		b := []byte(s)
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		return string(b)
	}
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// NewRedactor builds a redactor for the given secrets (each in the forms
// secretForms lists) and rules; longest needles win.
func NewRedactor(secrets []Secret, rules []Rule) *Redactor {
	type pair struct{ needle, name string }
	seen := map[string]bool{}
	var pairs []pair
	for _, s := range secrets {
		for _, f := range secretForms(s.Value) {
			if !seen[f] {
				seen[f] = true
				pairs = append(pairs, pair{f, s.Name})
			}
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].needle) > len(pairs[j].needle) })
	r := &Redactor{rules: rules, secrets: secrets}
	var args []string
	for _, p := range pairs {
		args = append(args, p.needle, "<redacted:"+p.name+">")
		r.filter.add(p.needle)
		r.needles = append(r.needles, p.needle)
		if strings.Contains(p.needle, "\n") {
			r.nlNeedles = append(r.nlNeedles, p.needle)
		}
		r.maxNeedle = max(r.maxNeedle, len(p.needle))
	}
	if len(args) > 0 {
		r.replacer = sync.OnceValue(func() *strings.Replacer { return strings.NewReplacer(args...) })
	}
	return r
}

// With returns a redactor for r's secrets and rules plus more (a run's
// own secrets, known only once it starts); r is not changed.
func (r *Redactor) With(more ...Secret) *Redactor {
	if r == nil {
		return NewRedactor(more, nil)
	}
	return NewRedactor(append(slices.Clone(r.secrets), more...), r.rules)
}

// Redact returns s with every secret replaced. Applying it twice changes
// nothing more: markers match no needle and no rule.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	if r.replacer != nil && r.filter.mayContain(s) {
		s = r.replacer().Replace(s)
	}
	if len(r.rules) == 0 {
		return s
	}
	ranges := linesWithTokens(s)
	if len(ranges) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, rg := range ranges {
		line := s[rg[0]:rg[1]]
		if red := r.redactLine(line); red != line {
			b.WriteString(s[last:rg[0]])
			b.WriteString(red)
			last = rg[1]
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// straddle finds an occurrence of one of needles that a cut of b at at
// would split: one that covers b[at-1] and continues at b[at] (or past the
// end of b when at == len(b)). An occurrence that runs off either end of b
// counts when the part b shows matches. It returns the occurrence's span,
// which may reach outside b.
func straddle(needles []string, b []byte, at int) (lo, hi int, ok bool) {
	if at <= 0 || at > len(b) {
		return 0, 0, false
	}
	for _, n := range needles {
		for k := 1; k < len(n); k++ { // k bytes of n lie before the cut
			if n[k-1] != b[at-1] || (at < len(b) && n[k] != b[at]) {
				continue
			}
			lo, hi = at-k, at-k+len(n)
			vlo, vhi := max(lo, 0), min(hi, len(b))
			if string(b[vlo:vhi]) == n[vlo-lo:vhi-lo] {
				return lo, hi, true
			}
		}
	}
	return 0, 0, false
}

// cutBefore moves a cut of b back so that no secret's occurrence spans it.
func (r *Redactor) cutBefore(b []byte, at int) int {
	if r == nil {
		return at
	}
	return cutBeforeIn(r.needles, b, at)
}

// cutBeforeLine is cutBefore for a cut just after a newline: only a secret
// holding a newline can span it.
func (r *Redactor) cutBeforeLine(b []byte, at int) int {
	if r == nil {
		return at
	}
	return cutBeforeIn(r.nlNeedles, b, at)
}

func cutBeforeIn(needles []string, b []byte, at int) int {
	for {
		lo, _, ok := straddle(needles, b, at)
		if !ok {
			return at
		}
		at = max(lo, 0)
	}
}

// cutAfter moves a cut of b forward so that no secret's occurrence spans it.
func (r *Redactor) cutAfter(b []byte, at int) int {
	if r == nil {
		return at
	}
	for at < len(b) {
		_, hi, ok := straddle(r.needles, b, at)
		if !ok {
			break
		}
		at = min(hi, len(b))
	}
	return at
}

// redactLine applies the pattern rules to one line that holds a long token.
func (r *Redactor) redactLine(s string) string {
	lower := ""
	for i := range r.rules {
		rule := &r.rules[i]
		if len(rule.FoldLits) > 0 && lower == "" {
			lower = strings.ToLower(s)
		}
		if !rule.mayMatch(s, lower) {
			continue
		}
		if len(rule.FoldLits) > 0 {
			s = applyRuleOnLines(rule, s, lower)
			lower = "" // s may have changed
			continue
		}
		s = applyRule(*rule, s)
	}
	return s
}

// applyRuleOnLines runs a case-insensitive rule only on the lines holding
// one of its literals: common words like "key" must not cost a regexp pass
// over every block.
func applyRuleOnLines(rule *Rule, s, lower string) string {
	var b strings.Builder
	last := 0
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start + 1
		}
		hit := false
		for _, l := range rule.FoldLits {
			if strings.Contains(lower[start:end], l) {
				hit = true
				break
			}
		}
		if hit {
			if red := applyRule(*rule, s[start:end]); red != s[start:end] {
				b.WriteString(s[last:start])
				b.WriteString(red)
				last = end
			}
		}
		start = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func applyRule(rule Rule, s string) string {
	if rule.Group == 0 {
		return rule.regexp().ReplaceAllStringFunc(s, func(string) string { return "<redacted:" + rule.Name + ">" })
	}
	idx := rule.regexp().FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		start, end := m[2*rule.Group], m[2*rule.Group+1]
		if start < 0 || !highEntropy(s[start:end]) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString("<redacted:" + rule.Name + ">")
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// highEntropy: the generic rule only fires on values that look random
// (gitleaks uses 3.5 bits per character), so `password = "changeme"` stays.
func highEntropy(v string) bool {
	if strings.HasPrefix(v, "<redacted") {
		return false
	}
	var counts [256]int
	for i := 0; i < len(v); i++ {
		counts[v[i]]++
	}
	return shannon(counts[:], len(v)) >= 3.5
}

// privateKey matches PEM private key blocks, which span lines.
var (
	pemBegin = []byte("-----BEGIN ")
	pemKey   = []byte("PRIVATE KEY-----")
	pemEnd   = []byte("-----END ")
)

func isPEMBegin(line []byte) bool {
	return bytes.Contains(line, pemBegin) && bytes.Contains(line, pemKey)
}

func isPEMEnd(line []byte) bool {
	return bytes.Contains(line, pemEnd) && bytes.Contains(line, pemKey)
}

// shannon is the entropy in bits per symbol of a byte histogram.
func shannon(counts []int, n int) float64 {
	if n == 0 {
		return 0
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(n)
			h -= p * math.Log2(p)
		}
	}
	return h
}
