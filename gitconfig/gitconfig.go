// Package gitconfig reads a git configuration file strictly and decides
// which of its entries are credentials, so that the policy can show a
// repository's configuration to the sandbox without them (actions/checkout
// persists the job's token as an http extraheader in .git/config). It only
// parses and judges; it never writes a file.
package gitconfig

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds on what is parsed: a repository's config is a few hundred bytes;
// anything near these is not one, and is refused rather than half read.
const (
	MaxBytes   = 1 << 20
	MaxEntries = 10_000
)

// Entry is one variable of a config file. Section and Name are
// lower-cased (git's names are case-insensitive); Subsection is as
// written (case-sensitive), "" without one.
type Entry struct {
	Section, Subsection, Name string
	// Value is the decoded value; NoValue marks `name` alone (boolean true).
	Value   string
	NoValue bool
	Line    int
}

// Key is the entry's name as `git config` spells it: section.sub.name.
func (e Entry) Key() string {
	if e.Subsection == "" {
		return e.Section + "." + e.Name
	}
	return e.Section + "." + e.Subsection + "." + e.Name
}

// Error is a config that cannot be read strictly: where and what.
type Error struct {
	File string
	Line int
	What string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.What)
}

// Parse reads data (the file named file, for errors) as git does, but
// refuses whatever git would read in a way this parser might not: a NUL,
// a key on a section header's line, an unknown escape, an unterminated
// quote, more than MaxBytes or MaxEntries.
func Parse(file string, data []byte) ([]Entry, error) {
	if len(data) > MaxBytes {
		return nil, &Error{file, 0, fmt.Sprintf("%d bytes, more than the %d a git config is read up to", len(data), MaxBytes)}
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, &Error{file, 1 + bytes.Count(data[:i], []byte("\n")), "a NUL byte"}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	lines := strings.Split(string(data), "\n")
	var out []Entry
	section, sub, inSection := "", "", false
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimSuffix(lines[i], "\r")
		if !utf8.ValidString(line) {
			return nil, &Error{file, n, "not UTF-8"}
		}
		t := strings.TrimLeft(line, " \t")
		switch {
		case t == "" || t[0] == '#' || t[0] == ';':
			continue
		case t[0] == '[':
			var err string
			section, sub, err = header(t)
			if err != "" {
				return nil, &Error{file, n, err}
			}
			inSection = true
			continue
		}
		if !inSection {
			return nil, &Error{file, n, "a variable before any [section]"}
		}
		name, rest := varName(t)
		if name == "" {
			return nil, &Error{file, n, "not a [section], a variable or a comment"}
		}
		e := Entry{Section: section, Subsection: sub, Name: strings.ToLower(name), Line: n}
		rest = strings.TrimLeft(rest, " \t")
		switch {
		case rest == "" || rest[0] == '#' || rest[0] == ';':
			e.NoValue = true
		case rest[0] == '=':
			v, used, err := value(rest[1:], lines[i+1:])
			if err != "" {
				return nil, &Error{file, n, err}
			}
			e.Value = v
			i += used
		default:
			return nil, &Error{file, n, fmt.Sprintf("variable %q is followed by neither '=' nor the end of the line", name)}
		}
		if out = append(out, e); len(out) > MaxEntries {
			return nil, &Error{file, n, fmt.Sprintf("more than %d variables", MaxEntries)}
		}
	}
	return out, nil
}

// header parses `[section]`, `[section "sub"]` or the old `[section.sub]`.
func header(t string) (section, sub, err string) {
	name := t[1:]
	j := 0
	for j < len(name) && (isAlnum(name[j]) || name[j] == '-' || name[j] == '.') {
		j++
	}
	section, rest := name[:j], name[j:]
	if section == "" {
		return "", "", "a section header without a name"
	}
	var end int
	switch {
	case strings.HasPrefix(rest, "]"):
		end = 1
		if dot := strings.IndexByte(section, '.'); dot >= 0 {
			// The deprecated [section.sub]: sub is lower-cased by git.
			section, sub = section[:dot], strings.ToLower(section[dot+1:])
		}
	case rest != "" && (rest[0] == ' ' || rest[0] == '\t'):
		rest = strings.TrimLeft(rest, " \t")
		if !strings.HasPrefix(rest, `"`) || strings.Contains(section, ".") {
			return "", "", "a section header that is neither [section] nor [section \"subsection\"]"
		}
		if sub, end, err = quotedSub(rest); err != "" {
			return "", "", err
		}
	default:
		return "", "", "a section header that is neither [section] nor [section \"subsection\"]"
	}
	after := strings.TrimLeft(rest[end:], " \t")
	if after != "" && after[0] != '#' && after[0] != ';' {
		return "", "", "a variable on the section header's line (put it on a line of its own)"
	}
	return strings.ToLower(section), sub, ""
}

// quotedSub reads `"sub"]` at the start of rest (a backslash escapes the
// next byte) and returns the subsection and where the header ends.
func quotedSub(rest string) (sub string, end int, err string) {
	var b strings.Builder
	k := 1
	for ; k < len(rest) && rest[k] != '"'; k++ {
		if rest[k] == '\\' {
			k++
			if k == len(rest) {
				break
			}
		}
		b.WriteByte(rest[k])
	}
	if k >= len(rest) || !strings.HasPrefix(rest[k+1:], "]") {
		return "", 0, "a subsection name without its closing \"]"
	}
	return b.String(), k + 2, ""
}

// varName splits a variable's name (a letter, then letters, digits, '-')
// from what follows it.
func varName(t string) (name, rest string) {
	if t == "" || !isAlpha(t[0]) {
		return "", t
	}
	j := 1
	for j < len(t) && (isAlnum(t[j]) || t[j] == '-') {
		j++
	}
	return t[:j], t[j:]
}

// value decodes a value that starts in s and may continue (a backslash
// at the end of a line) on the following lines; used is how many of
// those it took.
func value(s string, next []string) (v string, used int, err string) {
	var b strings.Builder
	quoted := false
	pending := 0 // whitespace seen outside quotes, kept only if more follows
	for {
		s = strings.TrimSuffix(s, "\r")
		if b.Len() == 0 && !quoted {
			s = strings.TrimLeft(s, " \t")
		}
		for k := 0; k < len(s); k++ {
			c := s[k]
			switch {
			case c == '"':
				quoted = !quoted
				flush(&b, &pending)
			case c == '\\':
				if k+1 == len(s) {
					if used == len(next) {
						return "", 0, "a backslash at the end of the file"
					}
					goto more
				}
				k++
				r, ok := escapes[s[k]]
				if !ok {
					return "", 0, fmt.Sprintf("unknown escape \\%c in a value", s[k])
				}
				flush(&b, &pending)
				b.WriteByte(r)
			case !quoted && (c == '#' || c == ';'):
				k = len(s)
			case !quoted && (c == ' ' || c == '\t'):
				pending++
			default:
				flush(&b, &pending)
				b.WriteByte(c)
			}
		}
		if quoted {
			return "", 0, "a value whose quote is not closed on its line"
		}
		return b.String(), used, ""
	more:
		s = next[used]
		used++
		if !utf8.ValidString(s) {
			return "", 0, "not UTF-8"
		}
	}
}

// flush writes the whitespace held back inside a value (single spaces:
// git keeps inner whitespace as written; a tab counts as one space here,
// which only matters for display).
func flush(b *strings.Builder, pending *int) {
	if b.Len() > 0 {
		b.WriteString(strings.Repeat(" ", *pending))
	}
	*pending = 0
}

var escapes = map[byte]byte{'\\': '\\', '"': '"', 'n': '\n', 't': '\t', 'b': '\b'}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }
