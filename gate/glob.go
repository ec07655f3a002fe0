package gate

import (
	"fmt"
	"strings"
	"unicode"
)

// pattern is an operator's glob with Python's fnmatchcase semantics, as
// ai-triager used: * matches any run of characters (slashes and spaces
// included), ? any one character, [seq] one character in seq, [!seq] one
// not in it. Matching is case-sensitive and anchored at both ends.
type pattern struct {
	source string
	tokens []globToken
}

type globKind uint8

const (
	globLiteral globKind = iota
	globAnyRun           // *
	globAnyOne           // ?
	globClass            // [seq] or [!seq]
)

type globToken struct {
	kind    globKind
	r       rune      // globLiteral
	ranges  [][2]rune // globClass: inclusive ranges
	negated bool      // globClass: [!seq]
}

func compilePatterns(key string, sources []string) ([]pattern, error) {
	var out []pattern
	for _, s := range sources {
		p, err := compileGlob(s)
		if err != nil {
			return nil, fmt.Errorf("[sandbox] %s: bad pattern %q: %v", key, s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// compileGlob checks and compiles one pattern. Python would take an
// unclosed [ literally; here it is an error, as it is almost always a typo.
func compileGlob(s string) (pattern, error) {
	if strings.TrimSpace(s) == "" {
		return pattern{}, fmt.Errorf("it is empty")
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		return pattern{}, fmt.Errorf("it holds a control character")
	}
	p := pattern{source: s}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '*':
			if n := len(p.tokens); n == 0 || p.tokens[n-1].kind != globAnyRun {
				p.tokens = append(p.tokens, globToken{kind: globAnyRun})
			}
		case '?':
			p.tokens = append(p.tokens, globToken{kind: globAnyOne})
		case '[':
			tok, next, err := compileClass(rs, i)
			if err != nil {
				return pattern{}, err
			}
			p.tokens = append(p.tokens, tok)
			i = next
		default:
			p.tokens = append(p.tokens, globToken{kind: globLiteral, r: rs[i]})
		}
	}
	return p, nil
}

// compileClass reads the class that opens at rs[open] and returns it with
// the index of its closing ]. As in fnmatch, a ] first in the set (after an
// optional !) is a member, not the end.
func compileClass(rs []rune, open int) (globToken, int, error) {
	tok := globToken{kind: globClass}
	i := open + 1
	if i < len(rs) && rs[i] == '!' {
		tok.negated = true
		i++
	}
	first := true
	for ; i < len(rs); i++ {
		if rs[i] == ']' && !first {
			if len(tok.ranges) == 0 {
				return tok, 0, fmt.Errorf("[…] at %d is empty", open+1)
			}
			return tok, i, nil
		}
		first = false
		lo := rs[i]
		if i+2 < len(rs) && rs[i+1] == '-' && rs[i+2] != ']' {
			hi := rs[i+2]
			if hi < lo {
				return tok, 0, fmt.Errorf("range %c-%c is reversed", lo, hi)
			}
			tok.ranges = append(tok.ranges, [2]rune{lo, hi})
			i += 2
			continue
		}
		tok.ranges = append(tok.ranges, [2]rune{lo, lo})
	}
	return tok, 0, fmt.Errorf("the [ at %d is never closed", open+1)
}

func (t globToken) matches(r rune) bool {
	switch t.kind {
	case globLiteral:
		return t.r == r
	case globAnyOne:
		return true
	case globClass:
		in := false
		for _, rg := range t.ranges {
			if rg[0] <= r && r <= rg[1] {
				in = true
				break
			}
		}
		return in != t.negated
	}
	return false
}

// match reports whether the whole of text matches. It backtracks only to
// the last *, so it takes at most len(pattern)*len(text) steps.
func (p pattern) match(text string) bool {
	rs := []rune(text)
	ti, pi := 0, 0
	star, starText := -1, 0
	for ti < len(rs) {
		switch {
		case pi < len(p.tokens) && p.tokens[pi].kind == globAnyRun:
			star, starText = pi, ti
			pi++
		case pi < len(p.tokens) && p.tokens[pi].matches(rs[ti]):
			pi++
			ti++
		case star >= 0:
			starText++
			ti = starText
			pi = star + 1
		default:
			return false
		}
	}
	for pi < len(p.tokens) && p.tokens[pi].kind == globAnyRun {
		pi++
	}
	return pi == len(p.tokens)
}
