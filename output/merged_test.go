package output

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// recordingSink is a merged log that also keeps each write.
type recordingSink struct {
	mergedLog
	writes []string
}

func (r *recordingSink) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, string(p))
	r.mu.Unlock()
	return r.mergedLog.Write(p)
}

// interleave writes chunks to two streams sharing one sink, alternating
// between them as the chunks say (even index: stdout, odd: stderr).
func interleave(t *testing.T, limit int, chunks ...string) *recordingSink {
	t.Helper()
	sink := &recordingSink{}
	o := Options{Limit: limit, SinkLock: &sync.Mutex{}}
	streams := [2]*Stream{NewStream(sink, o), NewStream(sink, o)}
	for i, c := range chunks {
		if _, err := streams[i%2].Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	streams[0].Close()
	streams[1].Close()
	return sink
}

// Whole lines: every write to a sink starts a line and ends with a
// newline, so no interleaving of two streams' writes can put a line start
// anywhere but where a stream's own line starts; every line of the merged
// log is then one that a stream judged whole.
func TestWholeLinesOnly(t *testing.T) {
	long := strings.Repeat("y", maxHold+100)
	tests := []struct {
		name   string
		limit  int
		chunks []string
	}{
		{"partial lines on both", 1 << 16, []string{"text ##", "[add-mask]x\n", "\n", "::add-mask::y\n"}},
		{"a partial line, then the other's command", 1 << 16, []string{"   ", "::add-mask::x\n", "::set-output name=a::b\n", ""}},
		{"the last lines without newline", 1 << 16, []string{"a ##", "[add-mask]x", "b", ""}},
		{"a line longer than the hold", 1 << 20, []string{long, "\n", "::add-mask::", "x\n"}},
		{"the head closes before a long line", 200, []string{"short\n" + strings.Repeat("z", 150), "::add-mask::x\n", " ::warning::", "w\n"}},
		{"the cap cuts a line", 120, []string{strings.Repeat("w ", 200) + "::add-mask::x\n", "##", "[add-mask]y\n"}},
		{"pytest ids", 1 << 16, []string{"tests/test_a.py::", "tests/test_b.py::test_b PASSED\n", "test_a PASSED\n", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := interleave(t, tt.limit, tt.chunks...)
			for _, w := range sink.writes {
				if !strings.HasSuffix(w, "\n") {
					t.Errorf("a write does not end a line: %q", w[max(0, len(w)-60):])
				}
			}
			for _, l := range runnerLines(sink.b.String()) {
				if runnerParses(l) {
					t.Errorf("the runner would parse %q from the merged log", l[:min(len(l), 80)])
				}
			}
		})
	}
	// The pytest ids came back as printed, each on its own line.
	sink := interleave(t, 1<<16, "tests/test_a.py::", "tests/test_b.py::test_b PASSED\n", "test_a PASSED\n", "")
	if got := sink.b.String(); got != "tests/test_b.py::test_b PASSED\ntests/test_a.py::test_a PASSED\n" {
		t.Errorf("merged: %q", got)
	}
}

// serialSink fails the test when two writes overlap.
type serialSink struct {
	busy    atomic.Bool
	overlap atomic.Bool
	n       atomic.Int64
}

func (s *serialSink) Write(p []byte) (int, error) {
	if !s.busy.CompareAndSwap(false, true) {
		s.overlap.Store(true)
		return len(p), nil
	}
	time.Sleep(50 * time.Microsecond)
	s.n.Add(int64(len(p)))
	s.busy.Store(false)
	return len(p), nil
}

// SinkLock: two streams written at once never write to their shared sink
// at once (a pipe may split a large write around another writer's).
func TestSinkLockSerialisesWrites(t *testing.T) {
	sink := &serialSink{}
	o := Options{Limit: 1 << 20, SinkLock: &sync.Mutex{}}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		s := NewStream(sink, o)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				_, _ = s.Write([]byte(strings.Repeat("line of output\n", 20)))
			}
			s.Close()
		}()
	}
	wg.Wait()
	if sink.overlap.Load() {
		t.Fatal("two writes reached the sink at once")
	}
	if sink.n.Load() == 0 {
		t.Fatal("nothing written")
	}
}

// What is no workflow command comes back byte for byte, "::" anywhere but
// at a line's start included: an agent re-runs what it was shown.
func TestNoCommandUnchanged(t *testing.T) {
	for _, in := range []string{
		"tests/test_calc.py::test_evaluate[2 * (3 + 4)-14] PASSED                [ 42%]\n",
		"tests/test_calc.py::TestClass::test_method\n",
		"FAILED tests/x.py::test_y - AssertionError: assert 1 == 2\n",
		"std::vector<int>::iterator it = v.begin();\n",
		"  --> src/main.rs:3:5\n   |\n 3 |     std::process::exit(1);\n",
		"::1 localhost ip6-localhost ip6-loopback\n",
		"fe80::1%eth0\n",
		"\t::ffff:192.0.2.1\n",
		"x ::add-mask::y\n",
		"## Results\n",
		"ok :: here\n",
		"a\r\nb\r\n",
		"héllo wörld ✓\n",
	} {
		out, st := run(t, Options{Limit: 1 << 16}, in)
		if out != in || st.ChangedLines != 0 {
			t.Errorf("%q came back as %q (%d lines changed)", in, out, st.ChangedLines)
		}
	}
}
