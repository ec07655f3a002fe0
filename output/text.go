package output

import "strings"

// Text neutralises text triage-sandbox prints that holds names the sandbox
// chose (a file it left, a symlink's target, an error about either): the
// rules the command's own output gets, so an escape sequence is shown, not
// obeyed, and no line of it is a workflow command. Newlines are kept; the
// caller prints it from the start of a line.
func Text(s string) string {
	t, _ := neutralise(s)
	return t
}

// Line is Text for a message shown on one line: a newline in s is shown
// as ␊, so a name cannot start a line of its own (a forged message, a
// workflow command).
func Line(s string) string { return Text(strings.ReplaceAll(s, "\n", "\u240a")) }
