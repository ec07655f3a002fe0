package gate

import "testing"

// TestGlob checks fnmatchcase semantics: * crosses / and spaces, classes,
// negation, ] first in a class, anchoring and case.
func TestGlob(t *testing.T) {
	cases := []struct {
		pattern, text string
		want          bool
	}{
		{"gh issue close*", "gh issue close 1", true},
		{"gh issue close*", "gh issue closed", true},
		{"gh issue close*", "x gh issue close", false},
		{"*git push*", "cd a/b && git push origin", true},
		{"*git push*", "git pus", false},
		{"rm -rf*", "rm -rf /", true},
		{"a?c", "abc", true},
		{"a?c", "a/c", true},
		{"a?c", "ac", false},
		{"[abc]x", "bx", true},
		{"[!abc]x", "bx", false},
		{"[!abc]x", "dx", true},
		{"[a-c]", "b", true},
		{"[a-c]", "d", false},
		{"[]]", "]", true},
		{"[!]]", "a", true},
		{"[a-]", "-", true},
		{"Git*", "git push", false},
		{"*", "", true},
		{"**a**", "xxaxx", true},
		{"*a*b*c*", "aXbXc", true},
		{"*a*b*c*", "aXcXb", false},
		{"é?", "éü", true},
		{"[", "[", false}, // rejected at compile time; see TestConfigErrors
	}
	for _, c := range cases {
		p, err := compileGlob(c.pattern)
		if err != nil {
			if c.pattern != "[" {
				t.Errorf("compileGlob(%q): %v", c.pattern, err)
			}
			continue
		}
		if got := p.match(c.text); got != c.want {
			t.Errorf("%q.match(%q) = %v, want %v", c.pattern, c.text, got, c.want)
		}
	}
}
