package selftest

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestOneLine: evidence that quotes what the sandbox wrote is shown on one
// line, with no control or direction override left to obey, and a cut that
// never splits a rune.
func TestOneLine(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		n        int
		banned   []string
	}{
		{"newline and escape", "a\nb\x1b[31mc", 100, []string{"\n", "\x1b"}},
		{"C1 CSI", "x\u009b31my", 100, []string{"\u009b"}},
		{"bidi override", "evil\u202etxt.exe", 100, []string{"\u202e"}},
		{"cut inside a rune", strings.Repeat("é", 10), 5, nil},
	} {
		got := oneLine(tt.in, tt.n)
		if !utf8.ValidString(got) || strings.Contains(got, "\n") {
			t.Errorf("%s: %q", tt.name, got)
		}
		for _, b := range tt.banned {
			if strings.Contains(got, b) {
				t.Errorf("%s: %q still holds %q", tt.name, got, b)
			}
		}
	}
}
