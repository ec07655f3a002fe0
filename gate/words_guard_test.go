package gate

import (
	"slices"
	"testing"
)

// TestCheckArgvWords: the words the guard looks for files among are the
// shell's (quotes removed, nested code, redirection targets), and a
// relative one after a cd also names the file in that directory.
func TestCheckArgvWords(t *testing.T) {
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		argv []string
		want []string // among the words
		not  []string // never among them
	}{
		{[]string{"sh", "-c", "cd co && sh run.sh"}, []string{"run.sh", "co/run.sh"}, nil},
		{[]string{"sh", "-c", `sh c""o/run.sh`}, []string{"co/run.sh"}, nil},
		{[]string{"bash", "-c", `python3 'c'o/main.py`}, []string{"co/main.py"}, nil},
		{[]string{"sh", "-c", "printf x > 'co/a.sh'; cd co/src; cd ..; sh ../b.sh"}, []string{"co/a.sh", "co/src", "b.sh"}, nil},
		{[]string{"sh", "-c", `sh -c "cd repros && python3 1.py"`}, []string{"repros/1.py"}, nil},
		{[]string{"sh", "-c", `cd "$X" && sh run.sh`}, []string{"run.sh"}, []string{"$X/run.sh"}},
		{[]string{"sh", "-c", "cat <<'E'\nco/x.sh\nE"}, nil, []string{"E"}},
	}
	for _, c := range cases {
		_, ws := g.CheckArgvWords(c.argv)
		words := ws.All
		for _, w := range c.want {
			if !slices.Contains(words, w) {
				t.Errorf("%q: words %q lack %q", c.argv, words, w)
			}
		}
		for _, w := range c.not {
			if slices.Contains(words, w) {
				t.Errorf("%q: words %q hold %q", c.argv, words, w)
			}
		}
	}
	// The files it writes itself.
	for _, c := range []struct {
		argv []string
		want []string
	}{
		{[]string{"sh", "-c", "cat > x.sh <<'E'\ngit log\nE\nsh x.sh"}, []string{"x.sh"}},
		{[]string{"sh", "-c", "cd repros && echo 1 >> a.py 2>/dev/null"}, []string{"a.py", "repros/a.py", "/dev/null"}},
		{[]string{"sh", "-c", "curl -so x.py https://example.com/x"}, []string{"x.py"}},
		{[]string{"sh", "-c", "cat < in.txt"}, nil},
	} {
		_, ws := g.CheckArgvWords(c.argv)
		if !slices.Equal(ws.Written, c.want) {
			t.Errorf("%q: written %q, want %q", c.argv, ws.Written, c.want)
		}
	}
	// The words in a script's place.
	for _, c := range []struct {
		argv []string
		want []string
	}{
		{[]string{"sh", "-c", "cd co && sh run.sh x.txt"}, []string{"run.sh", "co/run.sh"}},
		{[]string{"bash", "-c", "python3 -u 'c'o/main.py arg; source ./env.sh; ./co/x"}, []string{"co/main.py", "./env.sh", "./co/x"}},
		{[]string{"env", "A=1", "node", "co/a.js"}, []string{"co/a.js"}},
		{[]string{"git", "log"}, nil},
		{[]string{"python3", "-m", "pytest", "co/t.py"}, nil},
	} {
		_, ws := g.CheckArgvWords(c.argv)
		if !slices.Equal(ws.Scripts, c.want) {
			t.Errorf("%q: scripts %q, want %q", c.argv, ws.Scripts, c.want)
		}
	}
}
