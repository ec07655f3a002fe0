package output

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// neutraliser makes command output safe to show in a terminal, a model's
// context or a CI log: control characters become visible pictures, so an
// escape sequence (OSC 52 clipboard writes, title and cursor reports, CSI
// queries) is shown rather than obeyed; bidi overrides and invisible
// characters are escaped (Trojan Source); and a line that GitHub Actions
// would read as a workflow command is marked and defused (see "Workflow
// commands" below).
type neutraliser struct {
	midLine bool     // the previous chunk did not end with a newline
	line    lineScan // the current line so far, when it spans chunks
}

// workflowPrefix is put before lines the Actions runner would obey.
const workflowPrefix = "[workflow command neutralised] "

// Workflow commands. actions/runner (ActionCommandManager.TryProcessCommand)
// reads each line of output (ended by \n, \r\n or a bare \r) with two
// parsers:
//
//   - ActionCommand.TryParseV2 TrimStart()s the line, removing every char
//     for which .NET's char.IsWhiteSpace is true (dotnetSpace), and obeys it
//     when it then StartsWith("::");
//   - the legacy ActionCommand.TryParse obeys a line that holds "##["
//     anywhere (IndexOf) with a "]" after it.
//
// Both comparisons are culture-sensitive: with ICU, characters that collate
// as nothing (ignorable: most controls, format characters such as U+00AD and
// U+200B, variation selectors) may be skipped inside "::" and "##[" too.
//
// So a line is marked with workflowPrefix when, skipping white space and
// ignorables at its start, it begins with ':' and ':' (ignorables between),
// or when it holds '#', '#', '[' (ignorables between); the prefix makes the
// line start with '['. Since a prefix cannot stop a search anywhere in the
// line, every such '[' is also written as `\[`. The Azure Pipelines form
// "##vso[" is treated the same way.
//
// A line start is not only where one stream has a newline: a CI log that
// merges stdout and stderr (GitHub Actions does) starts a line wherever the
// other stream's newline lands, at any write boundary of ours or any byte a
// pipe splits a write at. So the second ':' of every "::" (ignorables
// between), at the start of a line or not, is written as `\:`: no "::"
// is ever shown, and the runner needs one to start a command and another
// to end its name. All steps are idempotent: a marked, defused line
// matches no rule. Lines are judged one by one and each
// one anew: the runner's ::stop-commands:: makes later lines inert to the
// runner only, not to this rule.

// lineScan is what the rules need of the current line when it spans
// chunks (a line longer than a chunk).
type lineScan struct {
	lead   uint8  // leadSpace, leadColon or leadDone
	marked bool   // the prefix was written for this line
	hist   uint64 // sigBefore of the line so far
}

const (
	leadSpace = iota // only white space and ignorables so far
	leadColon        // then a ':'
	leadDone         // the "::" rule is decided
)

// scanLead advances the "::" rule over s, the line's next characters, and
// reports whether they complete it. It stops at the first decision.
func (l *lineScan) scanLead(s string) (command bool) {
	for _, r := range s {
		ign := ignorable(r)
		switch l.lead {
		case leadSpace:
			switch {
			case ign || dotnetSpace(r):
			case r == ':':
				l.lead = leadColon
			default:
				l.lead = leadDone
			}
		case leadColon:
			if !ign {
				l.lead = leadDone
				return r == ':'
			}
		default:
			return false
		}
	}
	return false
}

// sigBefore packs the last five significant (not ignorable) characters of
// a line made of what hist describes followed by s: the latest in the low
// byte, ASCII lower-cased, 0 for any other character.
func sigBefore(hist uint64, s string) uint64 {
	var h uint64
	n := 0
	for i := len(s); i > 0 && n < 5; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		if ignorable(r) {
			continue
		}
		c := uint64(0)
		if r < utf8.RuneSelf {
			c = uint64(unicode.ToLower(r))
		}
		h |= c << (8 * n)
		n++
	}
	if n < 5 {
		h |= hist << (8 * n)
	}
	return h & (1<<40 - 1)
}

// legacyBefore: a '[' after these significant characters makes "##[" or
// "##vso[".
func legacyBefore(h uint64) bool {
	const hh, hhvso = '#'<<8 | '#', '#'<<32 | '#'<<24 | 'v'<<16 | 's'<<8 | 'o'
	return h&0xffff == hh || h == hhvso
}

// needsMark reports whether s, what follows of the line up to its newline
// or the end of the chunk, makes it a workflow command: command for the
// "::" form, legacy for "##[".
func (l lineScan) needsMark(s string) (command, legacy bool) {
	command = l.scanLead(s)
	for j := 0; ; j++ {
		k := strings.IndexByte(s[j:], '[')
		if k < 0 {
			return command, false
		}
		j += k
		if legacyBefore(sigBefore(l.hist, s[:j])) {
			return command, true
		}
	}
}

// carry records the state of the line left unfinished at the end of a
// chunk: seg is its part in this chunk.
func (n *neutraliser) carry(seg string) {
	n.line.scanLead(seg)
	n.line.hist = sigBefore(n.line.hist, seg)
}

func (n *neutraliser) clean(s string) string {
	if !n.midLine {
		n.line = lineScan{}
	}
	if n.plain(s) {
		n.midLine = len(s) > 0 && s[len(s)-1] != '\n'
		if n.midLine {
			n.line = lineScan{}
			n.carry(s[strings.LastIndexByte(s, '\n')+1:])
		}
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	seg := 0 // where the current line's part in s starts
	for i := 0; i < len(s); {
		if i == seg {
			n.markLine(&b, s, i)
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '[' || r == ':':
			if n.breaks(r, s[seg:i]) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\n':
			b.WriteByte('\n')
			n.line = lineScan{}
			seg = i + 1
		case r == '\t':
			b.WriteByte('\t')
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				b.WriteByte('\r')
			} else {
				b.WriteString("\u240d") // ␍: a bare CR could overwrite what was shown
			}
		case r < 0x20:
			b.WriteRune(0x2400 + r) // control pictures: ␛ for ESC, ␇ for BEL, ␀ for NUL
		case r == 0x7f:
			b.WriteRune(0x2421) // ␡
		case r >= 0x80 && r <= 0x9f, isInvisible(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	n.midLine = len(s) > 0 && s[len(s)-1] != '\n'
	if n.midLine {
		n.carry(s[seg:])
	}
	return b.String()
}

// markLine writes the prefix before the line whose part in this chunk
// starts at s[i] when that part makes it a workflow command.
func (n *neutraliser) markLine(b *strings.Builder, s string, i int) {
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		end = len(s) - i
	}
	// Mid-line (a line longer than a chunk) the prefix still goes before
	// the "::" it breaks; a "##[" is only defused there, as the prefix
	// could complete a "##" shown before.
	lineStart := i > 0 || !n.midLine
	if command, legacy := n.line.needsMark(s[i : i+end]); !n.line.marked && (command || lineStart && legacy) {
		b.WriteString(workflowPrefix)
		n.line.marked = true
	}
}

// breaks reports whether r, after before on the current line, completes a
// "##[" or "##vso[" (r is '[') or a "::" (r is ':'; a merged log can start
// a line anywhere, so none is shown): r is then written after a backslash.
func (n *neutraliser) breaks(r rune, before string) bool {
	h := sigBefore(n.line.hist, before)
	if r == '[' {
		return legacyBefore(h)
	}
	return h&0xff == ':'
}

// plain is the fast path: a chunk that starts a line and holds printable
// ASCII, tabs and newlines only, no "##", no "::" and no line that starts
// (after spaces and tabs) with ':'.
func (n *neutraliser) plain(s string) bool {
	if n.midLine {
		return false
	}
	for i := 0; i < len(s); i++ {
		if special[s[i]] {
			return false
		}
	}
	if strings.Contains(s, "##") || strings.Contains(s, "::") {
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
