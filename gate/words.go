package gate

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// arg is one argument of a command as the gate sees it: the value the shell
// would pass when that is known, or else the word's shell source.
type arg struct {
	text     string       // the value when literal; the shell source otherwise
	prefix   string       // dynamic words: the literal value before the first expansion
	dynamic  bool         // the value is only known when the shell runs it
	glob     bool         // holds unquoted *, ? or [...] that the shell would expand
	implicit bool         // supplied at run time by a wrapper (xargs input); not shown in text
	word     *syntax.Word // the parsed word; nil for an exec'd argv and synthetic arguments
	// parts are the word's parts after brace expansion; nil when word is.
	parts []syntax.WordPart
}

func literal(s string) arg { return arg{text: s} }

func literals(ss []string) []arg {
	out := make([]arg, len(ss))
	for i, s := range ss {
		out[i] = literal(s)
	}
	return out
}

// mayBeOption reports whether the argument could start with "-" when the
// shell runs it: a dynamic word could, unless its literal start says not.
func (a arg) mayBeOption() bool {
	if !a.dynamic {
		return strings.HasPrefix(a.text, "-")
	}
	return a.prefix == "" || strings.HasPrefix(a.prefix, "-")
}

// is reports whether the argument is literally one of values.
func (a arg) is(values ...string) bool {
	return !a.dynamic && slices.Contains(values, a.text)
}

// maxBraceFields bounds brace expansion ({a,b}{c,d}… doubles per brace);
// a word that would expand to more counts as dynamic.
const maxBraceFields = 64

// words turns parsed words into arguments, brace-expanding them as bash does.
func words(ws []*syntax.Word) []arg {
	var out []arg
	for _, w := range ws {
		expansions, ok := expandBraces(w)
		if !ok {
			out = append(out, arg{text: source(w.Parts), dynamic: true, word: w})
			continue
		}
		for _, parts := range expansions {
			for _, field := range splitIFS(parts) {
				if len(field) == 0 {
					continue // an empty alternative ({,x}) gives no word
				}
				out = append(out, evalParts(field, w))
			}
		}
	}
	return out
}

// splitIFS splits a word's parts where an unquoted $IFS or ${IFS} stands:
// the shell splits the word there (rm${IFS}-rf${IFS}/ is rm -rf /).
func splitIFS(parts []syntax.WordPart) [][]syntax.WordPart {
	var out [][]syntax.WordPart
	start := 0
	for i, p := range parts {
		if pe, ok := p.(*syntax.ParamExp); ok && pe.Param != nil && pe.Param.Value == "IFS" && pe.Exp == nil && pe.Index == nil &&
			pe.Slice == nil && pe.Repl == nil && !pe.Length && !pe.Excl {
			out = append(out, parts[start:i])
			start = i + 1
		}
	}
	if start == 0 {
		return [][]syntax.WordPart{parts}
	}
	return append(out, parts[start:])
}

// wordArg evaluates a single word without brace expansion (redirection
// targets, assignment values).
func wordArg(w *syntax.Word) arg {
	if w == nil || len(w.Parts) == 0 {
		return arg{word: w}
	}
	return evalParts(w.Parts, w)
}

// evalParts works out a word's value from its parts, undoing quoting and
// escapes; any expansion makes the word dynamic.
func evalParts(parts []syntax.WordPart, w *syntax.Word) arg {
	a := arg{word: w, parts: parts}
	var b strings.Builder
	for _, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if unescapeUnquoted(&b, p.Value) {
				a.glob = true
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(decodeANSIC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, inner := range p.Parts {
				if lit, ok := inner.(*syntax.Lit); ok {
					unescapeDouble(&b, lit.Value)
					continue
				}
				if v, ok := staticSubst(inner, true); ok {
					b.WriteString(v)
					continue
				}
				if !a.dynamic {
					a.prefix = b.String()
				}
				a.dynamic = true
			}
		case *syntax.ExtGlob:
			a.glob = true
			b.WriteString(p.Op.String() + p.Pattern.Value + ")")
		default:
			if v, ok := staticSubst(part, false); ok {
				b.WriteString(v)
				continue
			}
			if !a.dynamic {
				a.prefix = b.String()
			}
			a.dynamic = true
		}
	}
	if a.dynamic {
		a.text = source(parts)
	} else {
		a.text = b.String()
	}
	return a
}

// unescapeUnquoted writes an unquoted literal's value (a backslash quotes
// the next character) and reports whether it holds glob characters.
func unescapeUnquoted(b *strings.Builder, s string) (glob bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		switch c {
		case '*', '?':
			glob = true
		case '[':
			if strings.IndexByte(s[i+1:], ']') >= 0 {
				glob = true
			}
		}
		b.WriteByte(c)
	}
	return glob
}

// unescapeDouble writes the value of a literal inside double quotes, where
// a backslash only quotes $, `, ", \ and newline.
func unescapeDouble(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
}

// decodeANSIC decodes the body of a $'…' string.
func decodeANSIC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			} else {
				b.WriteString(`\c`)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			n := digits(s[i+1:], max, 16)
			if n == 0 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			v, _ := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			i += n
			if c == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(runeOrReplacement(v))
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n := digits(s[i:], 3, 8)
			v, _ := strconv.ParseUint(s[i:i+n], 8, 32)
			i += n - 1
			b.WriteByte(byte(v))
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}

func runeOrReplacement(v uint64) rune {
	if v > utf8.MaxRune {
		return utf8.RuneError
	}
	return rune(v)
}

// digits counts the leading digits of s in base 8 or 16, at most max.
func digits(s string, max, base int) int {
	n := 0
	for n < len(s) && n < max {
		c := s[n]
		ok := c >= '0' && c <= '7'
		if base == 16 {
			ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		}
		if !ok {
			break
		}
		n++
	}
	return n
}

// staticSubst resolves the command substitutions whose value is plain
// from the text — $(which git), $(command -v rm), $(echo rm) — so that
// "$(which git) push" is judged as git push. Unquoted, the value must be
// one field that is not a glob.
func staticSubst(part syntax.WordPart, quoted bool) (string, bool) {
	vals, ok := plainSubst(part)
	if !ok {
		return "", false
	}
	var value string
	switch {
	case vals[0] == "echo" && !strings.HasPrefix(vals[1], "-"):
		value = strings.Join(vals[1:], " ")
	case vals[0] == "which" && len(vals) == 2 && !strings.HasPrefix(vals[1], "-"):
		value = vals[1]
	case (vals[0] == "command" && vals[1] == "-v" || vals[0] == "type" && (vals[1] == "-P" || vals[1] == "-p")) && len(vals) == 3:
		value = vals[2]
	default:
		return "", false
	}
	if !quoted && (value == "" || strings.ContainsAny(value, " \t\n*?[")) {
		return "", false
	}
	return value, true
}

// plainSubst is the words of a command substitution that is one plain
// simple command of literal words, at least two.
func plainSubst(part syntax.WordPart) ([]string, bool) {
	cs, ok := part.(*syntax.CmdSubst)
	if !ok || len(cs.Stmts) != 1 {
		return nil, false
	}
	st := cs.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Negated || st.Background || len(st.Redirs) > 0 || len(call.Assigns) > 0 || len(call.Args) < 2 {
		return nil, false
	}
	vals := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		lit, ok := plainLiteral(w)
		if !ok {
			return nil, false
		}
		vals = append(vals, lit)
	}
	return vals, true
}

// plainLiteral is the value of a word made of literal text and quotes only.
func plainLiteral(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if unescapeUnquoted(&b, p.Value) || strings.ContainsAny(p.Value, "{~") {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, inner := range p.Parts {
				lit, ok := inner.(*syntax.Lit)
				if !ok {
					return "", false
				}
				unescapeDouble(&b, lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// source prints word parts back as shell source, for showing a dynamic word.
func source(parts []syntax.WordPart) (text string) {
	if len(parts) == 0 {
		return ""
	}
	defer func() {
		if recover() != nil {
			text = "<dynamic>"
		}
	}()
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, &syntax.Word{Parts: parts}); err != nil {
		return "<dynamic>"
	}
	return b.String()
}
