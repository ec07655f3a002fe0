package sbpl

import (
	"fmt"
	"strings"
)

// MaxLiteral is the longest string literal sandbox-exec reads; longer ones
// fail with "Error reading string".
const MaxLiteral = 1024

// Node is one S-expression: a List, a Str or a Sym.
type Node interface{ pos() int }

// List is a parenthesised form.
type List struct {
	At    int
	Items []Node
}

// Str is a string literal; Raw is the #"..." form.
type Str struct {
	At  int
	Val string
	Raw bool
}

// Sym is a bare symbol (operation names, AF_UNIX, 1, #t).
type Sym struct {
	At   int
	Name string
}

func (l *List) pos() int { return l.At }
func (s *Str) pos() int  { return s.At }
func (s *Sym) pos() int  { return s.At }

// Parse reads every top-level form of src.
func Parse(src string) ([]Node, error) {
	p := &parser{src: src}
	var out []Node
	for {
		p.skip()
		if p.i >= len(p.src) {
			return out, nil
		}
		n, err := p.node()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
}

type parser struct {
	src string
	i   int
}

func (p *parser) errorf(at int, format string, args ...any) error {
	line := 1 + strings.Count(p.src[:min(at, len(p.src))], "\n")
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

// skip passes whitespace and ; comments.
func (p *parser) skip() {
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == ';':
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.i++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) node() (Node, error) {
	start := p.i
	switch {
	case p.src[p.i] == '(':
		p.i++
		l := &List{At: start}
		for {
			p.skip()
			if p.i >= len(p.src) {
				return nil, p.errorf(start, "unclosed (")
			}
			if p.src[p.i] == ')' {
				p.i++
				return l, nil
			}
			n, err := p.node()
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, n)
		}
	case p.src[p.i] == ')':
		return nil, p.errorf(start, "unexpected )")
	case p.src[p.i] == '"':
		return p.plain()
	case strings.HasPrefix(p.src[p.i:], `#"`):
		return p.raw()
	case p.src[p.i] == '\'':
		return nil, p.errorf(start, "quoted symbols are not supported")
	}
	for p.i < len(p.src) && !strings.ContainsRune(" \t\r\n();\"", rune(p.src[p.i])) {
		p.i++
	}
	return &Sym{At: start, Name: p.src[start:p.i]}, nil
}

// plain reads a "..." string with Scheme escapes.
func (p *parser) plain() (Node, error) {
	start := p.i
	p.i++
	var b strings.Builder
	for {
		if p.i >= len(p.src) {
			return nil, p.errorf(start, "unterminated string")
		}
		c := p.src[p.i]
		p.i++
		switch c {
		case '"':
			return p.literal(start, b.String(), false)
		case '\\':
			if p.i >= len(p.src) {
				return nil, p.errorf(start, "unterminated string")
			}
			e := p.src[p.i]
			p.i++
			switch e {
			case '\\', '"':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return nil, p.errorf(start, "unsupported escape \\%c in a string", e)
			}
		default:
			b.WriteByte(c)
		}
	}
}

// raw reads a #"..." literal: every byte up to the next quote, backslashes kept.
func (p *parser) raw() (Node, error) {
	start := p.i
	p.i += 2
	end := strings.IndexByte(p.src[p.i:], '"')
	if end < 0 {
		return nil, p.errorf(start, "unterminated #\" literal")
	}
	val := p.src[p.i : p.i+end]
	p.i += end + 1
	return p.literal(start, val, true)
}

func (p *parser) literal(start int, val string, raw bool) (Node, error) {
	if len(val) > MaxLiteral {
		return nil, p.errorf(start, "a string literal of %d bytes: sandbox-exec refuses literals over %d bytes (Error reading string)", len(val), MaxLiteral)
	}
	return &Str{At: start, Val: val, Raw: raw}, nil
}

// Literals returns every string literal in the forms, for size checks.
func Literals(nodes []Node) []*Str {
	var out []*Str
	var walk func(n Node)
	walk = func(n Node) {
		switch n := n.(type) {
		case *Str:
			out = append(out, n)
		case *List:
			for _, it := range n.Items {
				walk(it)
			}
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return out
}
