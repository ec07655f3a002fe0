package sbpl

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Profile is a compiled profile: its rules in order and its default.
type Profile struct {
	Rules []*Rule
	// DefaultAllow is the last (allow|deny default) seen; HasDefault says
	// one was.
	DefaultAllow bool
	HasDefault   bool
	// DefaultText is the default rule as written, for explanations.
	DefaultText string
}

// Rule is one (allow|deny ...) form.
type Rule struct {
	Allow bool
	Ops   []string
	// Filters are alternatives; none means the rule is unfiltered.
	Filters []Filter
	// Modifiers are the (with ...) clauses, e.g. "message tsbx:1", "no-sandbox".
	Modifiers []string
	// Index is the rule's position in the profile; Text its source form.
	Index int
	Text  string
}

// Compile parses and compiles src with the -D parameters params.
func Compile(src string, params map[string]string) (*Profile, error) {
	nodes, err := Parse(src)
	if err != nil {
		return nil, err
	}
	c := &compiler{src: src, params: params}
	prof := &Profile{}
	for i, n := range nodes {
		l, ok := n.(*List)
		if !ok || len(l.Items) == 0 {
			return nil, c.errorf(n, "a top-level form must be a non-empty list")
		}
		head, _ := l.Items[0].(*Sym)
		if head == nil {
			return nil, c.errorf(n, "a form must start with a symbol")
		}
		if i == 0 && head.Name != "version" {
			return nil, c.errorf(n, "the profile must start with (version 1)")
		}
		switch head.Name {
		case "version":
			if i != 0 || len(l.Items) != 2 || symName(l.Items[1]) != "1" {
				return nil, c.errorf(n, "(version 1) must come first and once")
			}
		case "allow", "deny":
			r, isDefault, err := c.rule(l, head.Name == "allow")
			if err != nil {
				return nil, err
			}
			if isDefault {
				prof.DefaultAllow, prof.HasDefault, prof.DefaultText = r.Allow, true, r.Text
				continue
			}
			r.Index = len(prof.Rules)
			prof.Rules = append(prof.Rules, r)
		default:
			return nil, c.errorf(n, "unsupported top-level form %q", head.Name)
		}
	}
	if len(nodes) == 0 {
		return nil, errors.New("empty profile")
	}
	return prof, nil
}

type compiler struct {
	src    string
	params map[string]string
}

func (c *compiler) errorf(n Node, format string, args ...any) error {
	at := n.pos()
	line := 1 + strings.Count(c.src[:min(at, len(c.src))], "\n")
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

func symName(n Node) string {
	if s, ok := n.(*Sym); ok {
		return s.Name
	}
	return ""
}

func (c *compiler) text(l *List) string {
	end := len(c.src)
	depth := 0
	for i := l.At; i < len(c.src); i++ {
		// Good enough for explanations: parentheses inside strings are rare in what we emit.
		switch c.src[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				end = i + 1
				i = len(c.src)
			}
		}
	}
	return strings.Join(strings.Fields(c.src[l.At:end]), " ")
}

// rule compiles (allow|deny OP... FILTER... (with ...)...).
func (c *compiler) rule(l *List, allow bool) (*Rule, bool, error) {
	r := &Rule{Allow: allow, Text: c.text(l)}
	for _, it := range l.Items[1:] {
		switch it := it.(type) {
		case *Sym:
			if len(r.Filters) > 0 {
				return nil, false, c.errorf(it, "operation %s after a filter", it.Name)
			}
			if it.Name == "default" {
				r.Ops = append(r.Ops, it.Name)
				continue
			}
			if !knownOps[it.Name] {
				return nil, false, c.errorf(it, "unknown operation %q", it.Name)
			}
			r.Ops = append(r.Ops, it.Name)
		case *List:
			if symName(it.Items[0]) == "with" {
				m, err := c.modifier(it)
				if err != nil {
					return nil, false, err
				}
				r.Modifiers = append(r.Modifiers, m)
				continue
			}
			f, err := c.filter(it)
			if err != nil {
				return nil, false, err
			}
			r.Filters = append(r.Filters, f)
		default:
			return nil, false, c.errorf(it, "a bare string in a rule")
		}
	}
	if len(r.Ops) == 0 {
		return nil, false, c.errorf(l, "a rule without an operation")
	}
	for _, op := range r.Ops {
		if op == "default" {
			if len(r.Ops) != 1 || len(r.Filters) != 0 {
				return nil, false, c.errorf(l, "default takes no other operation and no filter")
			}
			return r, true, nil
		}
	}
	return r, false, nil
}

func (c *compiler) modifier(l *List) (string, error) {
	if len(l.Items) < 2 {
		return "", c.errorf(l, "empty (with)")
	}
	name := symName(l.Items[1])
	switch name {
	case "no-log", "report", "no-report", "no-sandbox":
		if len(l.Items) != 2 {
			return "", c.errorf(l, "(with %s) takes nothing more", name)
		}
		return name, nil
	case "message":
		if len(l.Items) != 3 {
			return "", c.errorf(l, "(with message S) takes one string")
		}
		s, err := c.str(l.Items[2])
		return "message " + s, err
	}
	return "", c.errorf(l, "unsupported modifier %q", name)
}

// str evaluates a string expression: a literal, (param K),
// (string-append E...) or (regex-quote E).
func (c *compiler) str(n Node) (string, error) {
	switch n := n.(type) {
	case *Str:
		return n.Val, nil
	case *List:
		if len(n.Items) == 0 {
			return "", c.errorf(n, "empty expression")
		}
		switch symName(n.Items[0]) {
		case "param":
			if len(n.Items) != 2 {
				return "", c.errorf(n, "(param K) takes one name")
			}
			k, ok := n.Items[1].(*Str)
			if !ok {
				return "", c.errorf(n, "(param K): K must be a string literal")
			}
			v, ok := c.params[k.Val]
			if !ok {
				return "", c.errorf(n, "parameter %q is not given (-D %s=...)", k.Val, k.Val)
			}
			return v, nil
		case "string-append":
			var b strings.Builder
			for _, it := range n.Items[1:] {
				s, err := c.str(it)
				if err != nil {
					return "", err
				}
				b.WriteString(s)
			}
			return b.String(), nil
		case "regex-quote":
			if len(n.Items) != 2 {
				return "", c.errorf(n, "(regex-quote E) takes one expression")
			}
			s, err := c.str(n.Items[1])
			return regexp.QuoteMeta(s), err
		}
		return "", c.errorf(n, "unsupported expression %q", symName(n.Items[0]))
	}
	return "", c.errorf(n, "expected a string, found the symbol %q", symName(n))
}
