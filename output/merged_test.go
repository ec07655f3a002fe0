package output

import (
	"strings"
	"sync"
	"testing"
)

// mergedLog is a CI log that merges a step's stdout and stderr write by
// write, as GitHub Actions does.
type mergedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (m *mergedLog) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.b.Write(p)
}

// stripIgnorable drops what a culture-sensitive comparison may skip.
func stripIgnorable(s string) string {
	return strings.Map(func(r rune) rune {
		if ignorable(r) {
			return -1
		}
		return r
	}, s)
}

// The review's case: with output_limit = "1m", 70,000 characters and then
// blanks on stdout (no newline), a newline on stderr, then ::add-mask::
// on stdout. Each stream alone is mid-line; merged, the command starts a
// line.
func TestWorkflowCommandThroughMergedLog(t *testing.T) {
	var log mergedLog
	o := Options{Limit: 1 << 20}
	stdout, stderr := NewStream(&log, o), NewStream(&log, o)
	write := func(s *Stream, p string) {
		if _, err := s.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	write(stdout, strings.Repeat("x", 70000)+strings.Repeat(" ", 4096))
	write(stderr, "\n")
	write(stdout, "::add-mask::hunter2\n")
	stdout.Close()
	stderr.Close()
	for _, l := range runnerLines(log.b.String()) {
		if runnerParses(stripIgnorable(l)) {
			t.Errorf("the runner would parse %q from the merged log", strings.TrimSpace(l))
		}
	}
}

// Wherever a merged log can start a line (any write boundary, any byte a
// pipe splits at), what follows must not be a command: no "::" is shown
// anywhere, even with ignorables between the colons, and a chunk boundary
// between the colons changes nothing.
func TestWorkflowCommandAnywhere(t *testing.T) {
	tests := [][]string{
		{"x ::add-mask::y\n"},
		{"text then ::set-output name=a::b"},
		{"[workflow command neutralised] ::add-mask::x\n"},
		{"a :\u00ad:error title=t::forged\n"},
		{"a :", ":add-mask::x\n"},
		{"a :\u200b", "\u200b:add-mask::x\n"},
		{"::::::\n"},
		{"std::vector<int>::iterator\n"},
	}
	for _, chunks := range tests {
		var n neutraliser
		var out strings.Builder
		for _, c := range chunks {
			out.WriteString(n.clean(c))
		}
		if strings.Contains(stripIgnorable(out.String()), "::") {
			t.Errorf("%q: a merged log could start a line at %q", chunks, out.String())
		}
		var again neutraliser
		if a := again.clean(out.String()); a != out.String() {
			t.Errorf("%q: not idempotent:\n%q\n%q", chunks, out.String(), a)
		}
	}
}
