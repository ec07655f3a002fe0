package confirm

import (
	"strconv"
	"strings"
)

// resetState undoes terminal state that earlier output on this terminal (an
// agent's command output, say) may have left behind to hide or garble the
// prompt: concealed or same-colour text (SGR), the line-drawing character
// set (SO, ESC ( 0), insert mode, autowrap off, a hidden cursor. It does not
// clear the screen or move the cursor.
const resetState = "\x1b[0m\x0f\x1b(B\x1b[4l\x1b[?7h\x1b[?25h"

// The frame. Every line of the command starts with one of these, written by
// us; the command cannot start a line of its own (it has no newline, carriage
// return or cursor movement left after Sanitize), so it cannot draw a header
// or a question outside the frame.
const (
	lineStart    = "  │ " // the first screen line of a command line
	lineContinue = "  ┆ " // a screen line the command line wrapped onto
	frameTop     = "  ┌─"
	frameBottom  = "  └─"
	ruleFirst    = "  rule     "
	ruleContinue = "         ┆ "
	defaultCols  = 80
	minTextCols  = 20
)

// renderPrompt is everything written before the answer is read, ending
// with the question for secs seconds left. cols is the terminal's width
// (0 when unknown).
func renderPrompt(p Prompt, cols, secs int) string {
	if cols <= 0 {
		cols = defaultCols
	}
	cmd := sanitizeRunes(p.Command)
	total := len(cmd)
	shown, cut := truncate(cmd, CommandMax)
	rule, _ := truncate(sanitizeRunes(p.Rule), RuleMax)
	if rule == "" {
		rule = "(no rule name given)"
	}

	var b strings.Builder
	b.WriteString(resetState)
	b.WriteString("\r\n\x1b[1;7m CONFIRM \x1b[0m\x1b[1m a gate rule asks you before this command runs\x1b[0m\r\n")
	writeWrapped(&b, []rune(rule), cols, ruleFirst, ruleContinue, ruleContinue)
	b.WriteString("  command  " + strconv.Itoa(total) + " characters")
	if string(cmd) != p.Command {
		b.WriteString("\r\n  note     it contains control or invisible characters, shown as ␛ ␍ ⏎ \uFFFD and the like")
	}
	if cut > 0 {
		b.WriteString("\r\n  \x1b[1mWARNING\x1b[0m  " + strconv.Itoa(cut) + " characters in the middle are not shown")
	}
	b.WriteString("\r\n" + frameTop + "\r\n")
	writeWrapped(&b, []rune(shown), cols, lineStart, lineContinue, lineStart)
	b.WriteString(frameBottom + "\r\n")
	b.WriteString("  [s]ession allows exactly this command line again until this run ends\r\n")
	b.WriteString(question(secs))
	return b.String()
}

// question is the last line of the prompt; the countdown rewrites it in
// place (see requestion).
func question(secs int) string {
	return "\x1b[1mRun it? [y]es once / [s]ession / [N]o (" + strconv.Itoa(secs) + "s)\x1b[0m "
}

// requestion rewrites the question line with a new count.
func requestion(secs int) string { return "\r" + question(secs) + "\x1b[K" }

// outcome is written after the answer so the operator sees what was decided.
func outcome(text string) string { return "\r\n  → " + text + "\r\n" }

// writeWrapped writes text as screen lines no wider than the terminal, each
// starting with a prefix: first for the very first line, cont for a line
// that wrapped, next for a line after a newline mark. Lines are wrapped by
// us rather than the terminal so that every line carries its prefix.
func writeWrapped(b *strings.Builder, text []rune, cols int, first, cont, next string) {
	// One column spare: writing the last column leaves some terminals in a
	// pending-wrap state that the next character resolves differently.
	avail := cols - cellWidth(first) - 1
	if avail < minTextCols {
		avail = minTextCols
	}
	for i, l := range wrap(text, avail) {
		switch {
		case i == 0:
			b.WriteString(first)
		case l.cont:
			b.WriteString(cont)
		default:
			b.WriteString(next)
		}
		b.WriteString(string(l.text))
		b.WriteString("\r\n")
	}
}

type screenLine struct {
	text []rune
	cont bool // wrapped from the line before
}

// wrap splits text after each newline mark and wherever it would grow wider
// than avail columns. A wrap never leaves spaces at the end of a line, where
// they would be invisible: they move to the start of the next line, so
// "/tmp/x /" cannot read as "/tmp/x/".
func wrap(text []rune, avail int) []screenLine {
	var (
		lines []screenLine
		cur   []rune
		width int
		cont  bool
	)
	for _, r := range text {
		w := runeCells(r)
		if width+w > avail && len(cur) > 0 {
			k := len(cur)
			for k > 0 && cur[k-1] == ' ' {
				k--
			}
			var carry []rune
			if k > 0 && k < len(cur) && len(cur)-k+w <= avail {
				carry = append(carry, cur[k:]...)
				cur = cur[:k]
			}
			lines = append(lines, screenLine{cur, cont})
			cur, width, cont = carry, len(carry), true
		}
		cur = append(cur, r)
		width += w
		if r == newlineMark {
			lines = append(lines, screenLine{cur, cont})
			cur, width, cont = nil, 0, false
		}
	}
	if len(cur) > 0 || len(lines) == 0 {
		lines = append(lines, screenLine{cur, cont})
	}
	return lines
}

// runeCells over-estimates how many columns r takes: anything beyond ASCII
// may be wide, and over-estimating only makes lines shorter, while
// under-estimating would let the terminal wrap a line without its prefix.
func runeCells(r rune) int {
	if r < 0x80 {
		return 1
	}
	return 2
}

func cellWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeCells(r)
	}
	return n
}
