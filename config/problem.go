package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Problem is one thing wrong with a config file.
type Problem struct {
	File string // path as given
	Line int    // 1-based; 0 when unknown
	Key  string // dotted key, e.g. "sandbox.agent.writable"
	Msg  string // what is wrong
	Hint string // what to do, may be ""
	Err  error  // underlying error (e.g. from os.ReadFile), may be nil
}

// Error renders the problem on one line as FILE:LINE: KEY: MSG[; HINT],
// leaving out the parts that are empty.
func (p *Problem) Error() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(oneLine(p.File))
	}
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if p.Key != "" {
		b.WriteString(oneLine(p.Key))
		b.WriteString(": ")
	}
	msg := p.Msg
	if msg == "" {
		msg = "invalid"
	}
	b.WriteString(oneLine(msg))
	if p.Hint != "" {
		b.WriteString("; ")
		b.WriteString(oneLine(p.Hint))
	}
	return b.String()
}

// Unwrap lets errors.Is see the underlying error, e.g. fs.ErrNotExist.
func (p *Problem) Unwrap() error { return p.Err }

// Problems returns the *Problem values in err (as returned by Load or Parse),
// in order. Errors that are not problems are left out.
func Problems(err error) []*Problem {
	if err == nil {
		return nil
	}
	var out []*Problem
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	if p, ok := err.(*Problem); ok {
		return []*Problem{p}
	}
	var p *Problem
	if errors.As(err, &p) {
		return []*Problem{p}
	}
	return nil
}

// joinProblems sorts problems by line (keeping discovery order for ties) and
// joins them, so the caller can print one per line.
func joinProblems(ps []*Problem) error {
	if len(ps) == 0 {
		return nil
	}
	slices.SortStableFunc(ps, func(a, b *Problem) int { return cmp.Compare(a.Line, b.Line) })
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// oneLine escapes control and line-separator characters: a problem must stay
// on one line however hostile the file name or content is.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, needsEscape) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if needsEscape(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\u0085'
}
