package output

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzNeutralise: whatever the text, no line of the result is a workflow
// command by the wide model (ignorables skipped, "##[" anywhere), newlines
// are kept, a line that needs no change comes back byte for byte, the
// changed lines are counted, the result is valid UTF-8, and cleaning it
// again changes nothing.
func FuzzNeutralise(f *testing.F) {
	for _, s := range []string{
		"::add-mask::x\n", "  ::stop-commands::tok\n", "::1 localhost ip6-localhost\n",
		"tests/x.py::test_y[a-b] PASSED\n", "std::vector<int>::iterator\n", ":\u00ad::x", "x ##\u200b[add-mask]y",
		"##VSO[task.setvariable]x\r\n", "\x1b]52;c;ZXZpbA==\x07\n", "a\u202eb\xff\n", "progress\r::a::b\n", ":::\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, changed := neutralise(in)
		if strings.Count(out, "\n") != strings.Count(in, "\n") {
			t.Fatalf("%q: newlines %d -> %d", in, strings.Count(in, "\n"), strings.Count(out, "\n"))
		}
		if !utf8.ValidString(out) {
			t.Fatalf("%q: invalid UTF-8 out %q", in, out)
		}
		for _, l := range runnerLines(out) {
			if runnerParses(l) {
				t.Fatalf("%q: the runner would parse %q", in, l)
			}
		}
		inLines, outLines := strings.SplitAfter(in, "\n"), strings.SplitAfter(out, "\n")
		n := 0
		for i := range inLines {
			if inLines[i] != outLines[i] {
				n++
			} else if !asIs(inLines[i]) {
				t.Fatalf("%q: line %q needed a change", in, inLines[i])
			}
			if asIs(inLines[i]) && outLines[i] != inLines[i] {
				t.Fatalf("%q: line %q changed to %q", in, inLines[i], outLines[i])
			}
		}
		if n != changed {
			t.Fatalf("%q: %d lines changed, %d counted", in, n, changed)
		}
		if again, c := neutralise(out); again != out || c != 0 {
			t.Fatalf("%q: not idempotent: %q then %q", in, out, again)
		}
	})
}

// FuzzMergedStreams: two streams share one sink and write the fuzzer's
// chunks in turn, with a cap that may cut anywhere; every write to the
// sink ends a line, and no line of the merged log is a workflow command.
func FuzzMergedStreams(f *testing.F) {
	f.Add("text ##|[add-mask]x\n|\n|::add-mask::y\n", uint16(1<<12))
	f.Add("   |::add-mask::x\n|::set-output name=a::b|", uint16(64))
	f.Add("tests/a.py:|:test_a\n|::1 localhost\n|x", uint16(100))
	f.Fuzz(func(t *testing.T, script string, limit uint16) {
		chunks := strings.Split(script, "|")
		sink := interleave(t, int(limit)%4096+16, chunks...)
		for _, w := range sink.writes {
			if !strings.HasSuffix(w, "\n") {
				t.Fatalf("%q: a write does not end a line: %q", chunks, w)
			}
		}
		for _, l := range runnerLines(sink.b.String()) {
			if runnerParses(l) {
				t.Fatalf("%q: the runner would parse %q", chunks, l)
			}
		}
	})
}
