package config

import (
	"testing"
)

func TestIndexLines(t *testing.T) {
	const doc = `# header comment
top = 1
a.b."c.d" = 2
[t]
'lit' = 'x'
"q\u0041" = "y\"z"
ml = """
[fake]
not = 1
"""
ml2 = '''x''''
arr = [
  1, # c = 3
  { inner = 4 },
]
[[arr_t]]
k = 1
[[arr_t]]
k = 2
[ s . "x y" ]
it = { a = 1, b = { c = 2 } }
`
	ix := indexLines(doc)
	tests := []struct {
		path []string
		want int
	}{
		{[]string{"top"}, 2},
		{[]string{"a"}, 3},
		{[]string{"a", "b", "c.d"}, 3},
		{[]string{"t"}, 4},
		{[]string{"t", "lit"}, 5},
		{[]string{"t", "qA"}, 6},
		{[]string{"t", "ml"}, 7},
		{[]string{"t", "ml2"}, 11},
		{[]string{"t", "arr"}, 12},
		{[]string{"arr_t"}, 16},
		{[]string{"arr_t", "k"}, 19},
		{[]string{"s", "x y"}, 20},
		{[]string{"s", "x y", "it", "b", "c"}, 21},
		// Not recorded: falls back to the nearest table.
		{[]string{"t", "fake"}, 4},
		{[]string{"nothing"}, 0},
	}
	for _, tt := range tests {
		if got := ix.line(tt.path); got != tt.want {
			t.Errorf("line(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	for _, k := range [][]string{{"fake"}, {"fake", "not"}, {"inner"}, {"c"}} {
		if _, ok := ix[pathKey(k)]; ok {
			t.Errorf("%q recorded from inside a string, array or comment", k)
		}
	}
}

// TestHeaderWinsOverImplied: [a] after [a.b] gets its own line.
func TestHeaderWinsOverImplied(t *testing.T) {
	ix := indexLines("[a.b]\nx = 1\n[a]\ny = 2\n")
	if got := ix.line([]string{"a"}); got != 3 {
		t.Errorf("line(a) = %d, want 3", got)
	}
	if got := ix.line([]string{"a", "b", "x"}); got != 2 {
		t.Errorf("line(a.b.x) = %d, want 2", got)
	}
}
