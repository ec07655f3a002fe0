package output

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// workflowPrefix is put before a line the Actions runner would obey.
const workflowPrefix = "[workflow command neutralised] "

// Workflow commands. actions/runner reads a step's stdout and stderr each
// on its own, line by line (StreamReader.ReadLine: \n, \r\n or a bare \r
// ends a line), and gives every line to two parsers
// (ActionCommandManager.TryProcessCommand):
//
//   - ActionCommand.TryParseV2 TrimStart()s the line (every char for which
//     .NET's char.IsWhiteSpace is true: dotnetSpace), requires that it then
//     StartsWith("::"), and that IndexOf("::", 2) finds the "::" that ends
//     the command's name and properties. A line that starts with "::" and
//     has no second "::" is not a command: `::1 localhost ip6-localhost`
//     (an /etc/hosts line), `::ffff:10.0.0.1` and a lone "::" are shown
//     as printed.
//   - the legacy ActionCommand.TryParse obeys a line that holds "##["
//     anywhere (IndexOf) with a "]" after it.
//
// Both then look the command's name up among the registered ones. We do
// not: the set changes between runner versions, and after
// ::stop-commands::TOKEN the token itself is a command, whatever word it
// is. StartsWith and IndexOf(string) compare culture-sensitively: with ICU,
// characters that collate as nothing (ignorable: most controls, format
// characters such as U+00AD and U+200B, variation selectors) may be
// skipped inside "::" and "##[" too, so ignorables are skipped here
// everywhere, and a "::" may overlap the first one's second colon (with
// an ignorable between the first colons, IndexOf("::", 2) may start on
// the second of them).
//
// So a line is marked with workflowPrefix when, skipping white space and
// ignorables at its start, it begins with "::" and holds another "::"
// after (ignorables between): the prefix makes it start with '['. A line
// that holds "##[" or "##vso[" (the Azure Pipelines form; ignorables
// between, any case) is marked too, and every such '[' is written `\[`,
// since a prefix cannot stop a search anywhere in the line; this rule
// stays wide (no "]" needed): such lines are rare in real output. Nothing
// else is changed for workflow commands: `tests/x.py::test_y`,
// `std::vector` and `a::b::c` mid-line are shown as printed.
//
// These rules hold per line, so each line must reach the runner as the
// line that was judged: Stream writes whole lines only (see "Whole lines"
// in stream.go). The runner's ::stop-commands:: makes later lines inert to
// the runner only: every line is judged anew.

// neutralise makes text safe to show in a terminal, a model's context or
// a CI log, line by line: control characters become visible pictures, so
// an escape sequence (OSC 52 clipboard writes, title and cursor reports,
// CSI queries) is shown rather than obeyed; bidi overrides and invisible
// characters are escaped (Trojan Source); invalid UTF-8 is shown as \xNN;
// and a line the Actions runner would read as a workflow command is marked
// and defused. Each line (ended by '\n'; the last may lack one) is judged
// whole, from its start, and every other line comes back byte-identical.
// It returns the text and the number of lines it changed. Newlines are
// neither added nor removed. Cleaning its result again changes nothing.
func neutralise(s string) (string, int) {
	if plain(s) {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	changed := 0
	for len(s) > 0 {
		end := strings.IndexByte(s, '\n') + 1
		if end == 0 {
			end = len(s)
		}
		start := b.Len()
		cleanLine(&b, s[:end])
		if b.String()[start:] != s[:end] {
			changed++
		}
		s = s[end:]
	}
	return b.String(), changed
}

// cleanLine writes one line (with its '\n', if it has one) cleaned.
func cleanLine(b *strings.Builder, line string) {
	body := strings.TrimSuffix(line, "\n")
	if v2Command(body) || hasLegacy(body) {
		b.WriteString(workflowPrefix)
	}
	var hist uint64
	for i := 0; i < len(body); {
		r, size := utf8.DecodeRuneInString(body[i:])
		switch {
		case r == '[' && legacyBefore(hist):
			b.WriteString(`\[`)
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, "\\x%02x", body[i])
		case r == '\t':
			b.WriteByte('\t')
		case r == '\r':
			if i+1 == len(body) && len(line) > len(body) {
				b.WriteByte('\r') // CRLF
			} else {
				b.WriteString("\u240d") // ␍: a bare CR could overwrite what was shown, and ends a line for the runner
			}
		case r < 0x20:
			b.WriteRune(0x2400 + r) // control pictures: ␛ for ESC, ␇ for BEL, ␀ for NUL
		case r == 0x7f:
			b.WriteRune(0x2421) // ␡
		case r >= 0x80 && r <= 0x9f, isInvisible(r):
			fmt.Fprintf(b, "\\u%04x", r)
		default:
			b.WriteString(body[i : i+size])
		}
		hist = pushSig(hist, r)
		i += size
	}
	b.WriteString(line[len(body):])
}

// v2Command reports whether TryParseV2 could take line as a command:
// skipping white space and ignorables at its start, it begins with "::",
// and another "::" follows (ignorables skipped; it may share the first
// one's second colon).
func v2Command(line string) bool {
	const (
		lead  = iota // white space and ignorables so far
		colon        // then one ':'
		key          // "::" seen: look for the next one
	)
	state, prevColon := lead, false
	for _, r := range line {
		if ignorable(r) {
			continue
		}
		switch state {
		case lead:
			if dotnetSpace(r) {
				continue
			}
			if r != ':' {
				return false
			}
			state = colon
		case colon:
			if r != ':' {
				return false
			}
			state, prevColon = key, true
		default:
			if r == ':' && prevColon {
				return true
			}
			prevColon = r == ':'
		}
	}
	return false
}

// hasLegacy reports whether line holds "##[" or "##vso[" (ignorables
// between, any case).
func hasLegacy(line string) bool {
	if !strings.Contains(line, "[") || !strings.Contains(line, "#") {
		return false
	}
	var hist uint64
	for _, r := range line {
		if r == '[' && legacyBefore(hist) {
			return true
		}
		hist = pushSig(hist, r)
	}
	return false
}

// pushSig adds r to hist, the last five significant (not ignorable)
// characters of a line: the latest in the low byte, ASCII lower-cased, 0
// for any other character.
func pushSig(hist uint64, r rune) uint64 {
	if ignorable(r) {
		return hist
	}
	c := uint64(0)
	if r < utf8.RuneSelf {
		c = uint64(unicode.ToLower(r))
	}
	return (hist<<8 | c) & (1<<40 - 1)
}

// legacyBefore: a '[' after these significant characters makes "##[" or
// "##vso[".
func legacyBefore(h uint64) bool {
	const hh, hhvso = '#'<<8 | '#', '#'<<32 | '#'<<24 | 'v'<<16 | 's'<<8 | 'o'
	return h&0xffff == hh || h == hhvso
}

// plain is the fast path: text that holds printable ASCII, tabs and
// newlines only, no "##", and no line whose first character after spaces
// and tabs is ':' (only such a line can be a "::" command).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if special[s[i]] {
			return false
		}
	}
	if strings.Contains(s, "##") {
		return false
	}
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j < len(s) && s[j] == ':' {
			return false
		}
		k := strings.IndexByte(s[j:], '\n')
		if k < 0 {
			break
		}
		i = j + k + 1
	}
	return true
}

// special marks bytes the slow path must look at: controls other than tab
// and newline, DEL, and every non-ASCII byte.
var special = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = (c < 0x20 && c != '\t' && c != '\n') || c >= 0x7f
	}
	return t
}()

// isInvisible: bidi controls, zero-width characters and line separators
// that can make text read differently from what it is.
func isInvisible(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x2028, r == 0x2029, r == 0xfeff, r == 0x061c:
		return true
	}
	return false
}

// dotnetSpace is .NET's char.IsWhiteSpace (what String.Trim removes), plus
// U+FEFF and U+180E, which older .NET versions counted.
func dotnetSpace(r rune) bool {
	switch {
	case r >= 0x09 && r <= 0x0d, r == 0x20, r == 0x85, r == 0xa0, r == 0x1680,
		r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f,
		r == 0x3000, r == 0xfeff, r == 0x180e:
		return true
	}
	return false
}

// ignorable: characters a culture-sensitive (ICU) comparison may skip:
// controls other than white space, format characters (Cf), and the other
// default-ignorable code points.
func ignorable(r rune) bool {
	switch {
	case r < 0x20:
		return r < 0x09 || r > 0x0d
	case r < 0x7f:
		return false
	case r <= 0x9f:
		return r != 0x85
	case r < 0x300:
		return r == 0xad
	case r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5, r >= 0x180b && r <= 0x180f,
		r == 0x3164, r >= 0xfe00 && r <= 0xfe0f, r == 0xffa0, r >= 0xfff0 && r <= 0xfff8,
		r >= 0xe0000 && r <= 0xe0fff:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}
