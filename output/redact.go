package output

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

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
			Re: regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b`)},
		{Name: "github-pat", Lits: []string{"github_pat_"}, Re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{22,255}\b`)},
		{Name: "anthropic-key", Lits: []string{"sk-ant-"}, Re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{20,}`)},
		{Name: "openai-key", Lits: []string{"sk-"}, Re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`)},
		{Name: "aws-access-key", Lits: []string{"A3T", "AKIA", "ASIA", "ABIA", "ACCA"},
			Re: regexp.MustCompile(`\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`)},
		{Name: "slack-token", Lits: []string{"xox"}, Re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
		{Name: "jwt", Lits: []string{"eyJ"}, Re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
		{Name: "generic-secret", Group: 1, FoldLits: []string{"key", "secret", "token", "passw", "credential", "auth"},
			Re: regexp.MustCompile(`(?i)(?:api[_-]?key|secret|token|passw(?:or)?d|credential|auth)[A-Za-z0-9_-]*["']?\s*[:=]\s*["']?([A-Za-z0-9_./+=\-]{16,})`)},
	}
}

// Redactor replaces secrets in text. It is immutable and safe to share.
type Redactor struct {
	replacer *strings.Replacer
	filter   needleFilter
	rules    []Rule
	// maxNeedle is the longest exact needle: a streaming caller must hold
	// back that many bytes minus one to catch a secret split across writes.
	maxNeedle int
}

// NewRedactor builds a redactor for the given secrets (each also in its
// base64, URL-encoded and hex forms) and rules; longest needles win.
func NewRedactor(secrets []Secret, rules []Rule) *Redactor {
	type pair struct{ needle, name string }
	seen := map[string]bool{}
	var pairs []pair
	add := func(needle, name string) {
		if len(needle) >= MinSecretLen && !seen[needle] {
			seen[needle] = true
			pairs = append(pairs, pair{needle, name})
		}
	}
	for _, s := range secrets {
		if len(s.Value) < MinSecretLen {
			continue
		}
		v := s.Value
		add(v, s.Name)
		add(base64.StdEncoding.EncodeToString([]byte(v)), s.Name)
		add(base64.RawStdEncoding.EncodeToString([]byte(v)), s.Name)
		add(base64.URLEncoding.EncodeToString([]byte(v)), s.Name)
		add(base64.RawURLEncoding.EncodeToString([]byte(v)), s.Name)
		add(url.QueryEscape(v), s.Name)
		add(url.PathEscape(v), s.Name)
		add(hex.EncodeToString([]byte(v)), s.Name)
		add(strings.ToUpper(hex.EncodeToString([]byte(v))), s.Name)
	}
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].needle) > len(pairs[j].needle) })
	r := &Redactor{rules: rules}
	var args []string
	for _, p := range pairs {
		args = append(args, p.needle, "<redacted:"+p.name+">")
		r.filter.add(p.needle)
		r.maxNeedle = max(r.maxNeedle, len(p.needle))
	}
	if len(args) > 0 {
		r.replacer = strings.NewReplacer(args...)
	}
	return r
}

// Redact returns s with every secret replaced. Applying it twice changes
// nothing more: markers match no needle and no rule.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	if r.replacer != nil && r.filter.mayContain(s) {
		s = r.replacer.Replace(s)
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
		return rule.Re.ReplaceAllStringFunc(s, func(string) string { return "<redacted:" + rule.Name + ">" })
	}
	idx := rule.Re.FindAllStringSubmatchIndex(s, -1)
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
