package config

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// lineIndex maps a key path to the line it is defined on. BurntSushi/toml does
// not export key positions, so indexLines finds them with a small structural
// scan of the text: table headers, "key =" (bare, quoted and dotted) and the
// keys of inline tables. Strings, arrays and comments are skipped so that
// their content is never taken for a key.
type lineIndex map[string]int

// maxIndexDepth bounds the key paths recorded: problems are only ever about
// short paths (sandbox.agent.set_env.NAME), and a bound keeps absurdly deep
// nesting from costing quadratic time.
const maxIndexDepth = 8

// pathKey turns a key path into a map key; NUL cannot appear in a bare key
// and is vanishingly unlikely in a quoted one.
func pathKey(path []string) string { return strings.Join(path, "\x00") }

// line returns the line of path or, failing that, of its longest recorded
// prefix (the table it is in); 0 when nothing is known.
func (ix lineIndex) line(path []string) int {
	for n := len(path); n > 0; n-- {
		if l, ok := ix[pathKey(path[:n])]; ok {
			return l
		}
	}
	return 0
}

// lineScanner is the state of one indexLines call.
type lineScanner struct {
	s      string
	i      int
	starts []int // byte offset of the start of each line
	ix     lineIndex
}

// indexLines scans TOML text. It is meant for text the TOML parser accepted,
// but it must not panic or loop on anything, so every step makes progress.
func indexLines(s string) lineIndex {
	sc := &lineScanner{s: s, starts: []int{0}, ix: lineIndex{}}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			sc.starts = append(sc.starts, i+1)
		}
	}
	var table []string
	for {
		sc.skipBlank(true)
		if sc.eof() {
			break
		}
		start := sc.i
		line := sc.lineAt(start)
		if sc.peek() == '[' {
			sc.i++
			array := sc.peek() == '['
			if array {
				sc.i++
			}
			table = sc.key()
			sc.recordTable(table, line, !array)
		} else if key := sc.key(); len(key) > 0 {
			sc.skipBlank(false)
			if sc.peek() == '=' {
				sc.i++
				full := concat(table, key)
				sc.recordKey(full, line)
				sc.value(full, len(full) < maxIndexDepth)
			}
		}
		sc.skipLine()
		if sc.i == start {
			sc.i++ // cannot happen with skipLine, but never loop
		}
	}
	return sc.ix
}

// recordTable records the line of a table and, where not yet known, of the
// tables it implies. An explicit [header] wins over an implied parent.
func (sc *lineScanner) recordTable(path []string, line int, explicit bool) {
	for n := 1; n <= min(len(path), maxIndexDepth); n++ {
		k := pathKey(path[:n])
		if _, ok := sc.ix[k]; !ok || (explicit && n == len(path)) {
			sc.ix[k] = line
		}
	}
}

// recordKey records the line of "key = value" and of the tables it implies.
func (sc *lineScanner) recordKey(full []string, line int) {
	sc.recordTable(full[:len(full)-1], line, false)
	if len(full) <= maxIndexDepth {
		sc.ix[pathKey(full)] = line
	}
}

func concat(a, b []string) []string {
	return append(append(make([]string, 0, len(a)+len(b)), a...), b...)
}

func (sc *lineScanner) eof() bool { return sc.i >= len(sc.s) }

func (sc *lineScanner) peek() byte {
	if sc.eof() {
		return 0
	}
	return sc.s[sc.i]
}

func (sc *lineScanner) lineAt(off int) int {
	return sort.Search(len(sc.starts), func(n int) bool { return sc.starts[n] > off })
}

// skipBlank skips spaces and tabs, and also newlines and comments when nl is set.
func (sc *lineScanner) skipBlank(nl bool) {
	for !sc.eof() {
		switch c := sc.s[sc.i]; {
		case c == ' ' || c == '\t':
			sc.i++
		case nl && (c == '\n' || c == '\r'):
			sc.i++
		case nl && c == '#':
			sc.skipLine()
		default:
			return
		}
	}
}

// skipLine moves past the next newline.
func (sc *lineScanner) skipLine() {
	if j := strings.IndexByte(sc.s[sc.i:], '\n'); j >= 0 {
		sc.i += j + 1
	} else {
		sc.i = len(sc.s)
	}
}

// key reads a possibly dotted key and the closing brackets of a header.
func (sc *lineScanner) key() []string {
	var parts []string
	for {
		sc.skipBlank(false)
		start := sc.i
		var part string
		switch sc.peek() {
		case '"':
			part = unescapeBasic(sc.quoted('"'))
		case '\'':
			part = sc.quoted('\'')
		default:
			for !sc.eof() && !strings.ContainsRune(" \t\r\n=.[]#\"',{}", rune(sc.s[sc.i])) {
				sc.i++
			}
			part = sc.s[start:sc.i]
		}
		if sc.i == start {
			break
		}
		parts = append(parts, part)
		sc.skipBlank(false)
		if sc.peek() != '.' {
			break
		}
		sc.i++
	}
	for sc.peek() == ']' {
		sc.i++
	}
	return parts
}

// quoted reads a single-line string starting at the opening quote q and
// returns its raw content.
func (sc *lineScanner) quoted(q byte) string {
	sc.i++
	start := sc.i
	for !sc.eof() {
		c := sc.s[sc.i]
		switch {
		case c == q:
			sc.i++
			return sc.s[start : sc.i-1]
		case c == '\n':
			return sc.s[start:sc.i]
		case c == '\\' && q == '"' && sc.i+1 < len(sc.s):
			sc.i += 2
		default:
			sc.i++
		}
	}
	return sc.s[start:]
}

// value skips one value; keys of inline tables are recorded under path when
// record is set (not inside arrays, whose elements have no dotted key).
func (sc *lineScanner) value(path []string, record bool) {
	sc.skipBlank(false)
	switch {
	case strings.HasPrefix(sc.s[sc.i:], `"""`), strings.HasPrefix(sc.s[sc.i:], `'''`):
		sc.multiline(sc.s[sc.i])
	case sc.peek() == '"' || sc.peek() == '\'':
		sc.quoted(sc.peek())
	case sc.peek() == '[':
		sc.i++
		sc.items(']', func() { sc.value(nil, false) })
	case sc.peek() == '{':
		sc.i++
		sc.items('}', func() { sc.inlineKey(path, record) })
	default:
		// Numbers, booleans and dates: up to the next delimiter.
		for !sc.eof() && !strings.ContainsRune(" \t\r\n,]}#", rune(sc.s[sc.i])) {
			sc.i++
		}
	}
}

// items skips the items of an array or inline table up to and past its
// closing byte, each with item; one that takes nothing is skipped a byte
// at a time. Newlines and comments are allowed between them (TOML 1.1 in
// inline tables).
func (sc *lineScanner) items(closing byte, item func()) {
	for {
		sc.skipBlank(true)
		if sc.eof() {
			return
		}
		switch sc.peek() {
		case closing:
			sc.i++
			return
		case ',':
			sc.i++
			continue
		}
		start := sc.i
		item()
		if sc.i == start {
			sc.i++
		}
	}
}

// inlineKey skips one `key = value` of an inline table, recording the
// key under path when record is set.
func (sc *lineScanner) inlineKey(path []string, record bool) {
	line := sc.lineAt(sc.i)
	key := sc.key()
	sc.skipBlank(false)
	if sc.peek() != '=' {
		return
	}
	sc.i++
	if record && len(key) > 0 && len(path)+len(key) <= maxIndexDepth {
		full := concat(path, key)
		sc.recordKey(full, line)
		sc.value(full, len(full) < maxIndexDepth)
		return
	}
	sc.value(nil, false)
}

// multiline skips a triple-quoted string, including up to two quote
// characters that end its content right before the closing delimiter.
func (sc *lineScanner) multiline(q byte) {
	sc.i += 3
	for !sc.eof() {
		c := sc.s[sc.i]
		if c == '\\' && q == '"' {
			sc.i += 2
			continue
		}
		if c == q && strings.HasPrefix(sc.s[sc.i:], string([]byte{q, q, q})) {
			sc.i += 3
			for n := 0; n < 2 && sc.peek() == q; n++ {
				sc.i++
			}
			return
		}
		sc.i++
	}
	sc.i = min(sc.i, len(sc.s))
}

// unescapeBasic decodes the escapes of a TOML basic string (used for quoted
// keys). An invalid escape is kept as written: the parser has rejected those.
func unescapeBasic(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte('\x1b')
		case '"', '\\':
			b.WriteByte(c)
		case 'x', 'u', 'U':
			n := 2
			if c == 'u' {
				n = 4
			} else if c == 'U' {
				n = 8
			}
			if i+1+n <= len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil && utf8.ValidRune(rune(r)) {
					b.WriteRune(rune(r))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}
