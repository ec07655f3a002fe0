package confirm

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CommandMax is how many runes of a sanitized command the prompt shows. It is
// large on purpose: the operator must see the command they approve, and a
// command longer than this is cut in the middle with the number of runes cut
// said in the marker and in the prompt's header.
const CommandMax = 4000

// RuleMax is how many runes of the rule's name and reason are shown.
const RuleMax = 400

// Stand-ins for what must not reach the terminal as it is.
const (
	newlineMark = '⏎'      // "\n"; the prompt also breaks the line after it
	hiddenMark  = '\uFFFD' // C1 controls, invalid UTF-8, invisible and format characters
	delMark     = '␡'      // DEL
	// maxMarks is how many combining marks in a row are shown as they are.
	// Longer runs ("zalgo" text) can draw over the lines around them in some
	// terminals; the rest of the run becomes one hiddenMark.
	maxMarks = 2
)

// Sanitize makes s safe to print on a terminal and honest to read, then
// limits it to max runes (max <= 0: no limit).
//
// Nothing in s can reach the terminal as a control: C0 controls become
// their Unicode control pictures (ESC is "␛", CR is "␍", BEL is "␇", tab is
// "␉"), "\n" becomes "⏎", DEL becomes "␡", and C1 controls, invalid UTF-8,
// bidi overrides and isolates (U+202A–U+202E, U+2066–U+2069), zero-width and
// other format characters, private-use and unassigned code points,
// non-ASCII spaces, blank-looking fillers and variation selectors become
// U+FFFD. An escape sequence is neutralised by its introducer alone: its
// printable remainder ("[2K", "]0;title") stays visible, because it is part
// of the command that will run and hiding it could hide shell text.
//
// Truncation comes after sanitizing, so a cut can never leave half an escape
// sequence. When s is longer than max, the first and last halves are kept and
// a marker in between says how many runes were cut; the cut is never silent.
func Sanitize(s string, max int) string {
	text, _ := truncate(sanitizeRunes(s), max)
	return text
}

// sanitizeRunes is Sanitize without the limit.
func sanitizeRunes(s string) []rune {
	out := make([]rune, 0, len(s))
	marks := 0 // combining marks in a row just before this rune
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size <= 1 {
			out = append(out, hiddenMark)
			marks = 0
			continue
		}
		if isMark(r) && !isInvisible(r) {
			marks++
			switch {
			case marks <= maxMarks:
				out = append(out, r)
			case marks == maxMarks+1:
				out = append(out, hiddenMark)
			}
			continue
		}
		marks = 0
		out = append(out, visible(r))
	}
	return out
}

// visible returns r, or the stand-in shown instead of it.
func visible(r rune) rune {
	switch {
	case r == '\n':
		return newlineMark
	case r < 0x20:
		return 0x2400 + r // Control Pictures: U+2400 ␀ … U+241F ␟
	case r == 0x7f:
		return delMark
	case r == ' ':
		return r
	case r >= 0x80 && r <= 0x9f:
		return hiddenMark // C1 controls, CSI (U+009B) and OSC (U+009D) among them
	case isInvisible(r):
		return hiddenMark
	case unicode.IsPrint(r):
		// IsPrint excludes format characters (Cf: bidi controls, zero-width
		// characters, BOM, soft hyphen, tags), non-ASCII spaces, line and
		// paragraph separators, private use and unassigned code points.
		return r
	}
	return hiddenMark
}

// isMark reports non-spacing and enclosing marks, the ones that stack on
// the character before them.
func isMark(r rune) bool { return unicode.In(r, unicode.Mn, unicode.Me) }

// isInvisible lists characters that Unicode calls printable but that show
// nothing, so two different command lines would look the same.
func isInvisible(r rune) bool {
	switch {
	case r == 0x034F, // combining grapheme joiner
		r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, // Hangul fillers
		r == 0x17B4, r == 0x17B5, // Khmer inherent vowels
		r == 0x2800,                  // braille blank
		r >= 0x180B && r <= 0x180F,   // Mongolian variation selectors, vowel separator
		r >= 0xFE00 && r <= 0xFE0F,   // variation selectors
		r >= 0xE0100 && r <= 0xE01EF: // variation selectors supplement
		return true
	}
	return false
}

// truncate keeps at most max runes of r (max <= 0: all), the first and last
// halves, with a marker in between saying how many were cut.
func truncate(r []rune, max int) (text string, cut int) {
	if max <= 0 || len(r) <= max {
		return string(r), 0
	}
	cut = len(r) - max
	head := (max + 1) / 2
	tail := max - head
	var b strings.Builder
	b.Grow(max*utf8.UTFMax + 48)
	b.WriteString(string(r[:head]))
	b.WriteString(" …[")
	b.WriteString(strconv.Itoa(cut))
	b.WriteString(" characters cut]… ")
	b.WriteString(string(r[len(r)-tail:]))
	return b.String(), cut
}

// Quote joins argv into one line a POSIX shell would split back into the
// same argv: an argument is kept as it is when it is made only of
// [A-Za-z0-9_@%+=:,./-], and single-quoted otherwise. The mapping is
// one-to-one, so Quote(argv) is the key Memory needs: joining with spaces
// alone would make ["rm", "-rf x"] and ["rm", "-rf", "x"] the same line.
func Quote(argv []string) string {
	var b strings.Builder
	for i, arg := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if arg != "" && strings.IndexFunc(arg, needsQuote) < 0 {
			b.WriteString(arg)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(arg, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

func needsQuote(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	case strings.ContainsRune("_@%+=:,./-", r):
		return false
	}
	return true
}
