package output

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// neutraliser makes command output safe to show in a terminal, a model's
// context or a CI log: control characters become visible pictures, so an
// escape sequence (OSC 52 clipboard writes, title and cursor reports, CSI
// queries) is shown rather than obeyed; bidi overrides and invisible
// characters are escaped (Trojan Source); and a line that GitHub Actions
// would read as a workflow command (::add-mask::, ::stop-commands::, ...)
// is prefixed so the runner ignores it.
type neutraliser struct {
	midLine bool // the previous chunk did not end with a newline
}

// workflowPrefix is put before lines the Actions runner would obey.
const workflowPrefix = "[workflow command neutralised] "

func (n *neutraliser) clean(s string) string {
	if n.plain(s) {
		n.midLine = len(s) > 0 && s[len(s)-1] != '\n'
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	lineStart := !n.midLine
	for i := 0; i < len(s); {
		if lineStart {
			if isWorkflowCommand(s[i:]) {
				b.WriteString(workflowPrefix)
			}
			lineStart = false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\n':
			b.WriteByte('\n')
			lineStart = true
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
	return b.String()
}

// plain is the fast path: printable ASCII, tabs and newlines, and no line
// that starts like a workflow command.
func (n *neutraliser) plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if special[s[i]] {
			return false
		}
	}
	// Line starts: the first line (unless it continues one) and after each
	// newline.
	for i := 0; i < len(s); {
		if i > 0 || !n.midLine {
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if j < len(s) && (s[j] == ':' || s[j] == '#') {
				return false
			}
		}
		k := strings.IndexByte(s[i:], '\n')
		if k < 0 {
			break
		}
		i += k + 1
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

// isWorkflowCommand: the runner trims leading white space and obeys lines
// starting with "::" (and the legacy "##[" / "##vso[" forms).
func isWorkflowCommand(s string) bool {
	t := strings.TrimLeft(s, " \t")
	return strings.HasPrefix(t, "::") || strings.HasPrefix(t, "##[") || strings.HasPrefix(t, "##vso[")
}
