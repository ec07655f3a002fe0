package output

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func run(t *testing.T, o Options, chunks ...string) (string, Stats) {
	t.Helper()
	var sink bytes.Buffer
	s := NewStream(&sink, o)
	for _, c := range chunks {
		if n, err := s.Write([]byte(c)); n != len(c) || err != nil {
			t.Fatalf("write returned %d, %v", n, err)
		}
	}
	st := s.Close()
	return sink.String(), st
}

func TestCapBoundaries(t *testing.T) {
	line := func(i int) string { return fmt.Sprintf("line %04d xxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", i) } // 40 bytes
	var all strings.Builder
	for i := 0; i < 1000; i++ {
		all.WriteString(line(i))
	}
	tests := []struct {
		name      string
		input     string
		limit     int
		truncated bool
	}{
		{"below the cap", all.String()[:400], 1000, false},
		{"at the cap", all.String()[:1000], 1000, false},
		{"one over the cap", all.String()[:1001], 1000, true},
		{"far over the cap", all.String(), 1000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, st := run(t, Options{Limit: tt.limit}, tt.input)
			if st.Truncated != tt.truncated {
				t.Fatalf("truncated = %v", st.Truncated)
			}
			if !tt.truncated {
				if out != tt.input {
					t.Fatalf("output changed below the cap")
				}
				return
			}
			if !strings.Contains(out, " bytes, ") || !strings.Contains(out, " lines omitted ...]") {
				t.Fatalf("no marker with counts: %q", out)
			}
			head, tail, _ := strings.Cut(out, "\n[... ")
			_, tail, _ = strings.Cut(tail, "...]\n")
			if !strings.HasSuffix(tt.input, "\n") {
				tail = strings.TrimSuffix(tail, "\n") // the last line is shown with a newline
			}
			if !strings.HasPrefix(tt.input, head) || !strings.HasSuffix(tt.input, tail) {
				t.Fatalf("head/tail not a prefix/suffix of the input")
			}
			if int64(len(head)+len(tail))+st.OmittedBytes != int64(len(tt.input)) {
				t.Fatalf("counts do not add up: head %d tail %d omitted %d input %d", len(head), len(tail), st.OmittedBytes, len(tt.input))
			}
			if got := int64(strings.Count(head, "\n") + strings.Count(tail, "\n")); got+st.OmittedLines != int64(strings.Count(tt.input, "\n")) {
				t.Fatalf("line counts do not add up")
			}
			if len(out) > tt.limit+80 {
				t.Fatalf("kept %d bytes for a limit of %d", len(out), tt.limit)
			}
		})
	}
}

func TestHeadFilledExactlyThenMore(t *testing.T) {
	// The head shows whole lines only; the tail starts after a separator:
	// never inside a token, which could be the end of a secret.
	out, st := run(t, Options{Limit: 20}, "012345678\n", "abcdefghij", "KLMNOPQRST", " uvwxyz")
	if !st.Truncated || !strings.HasPrefix(out, "012345678\n\n[") || !strings.HasSuffix(out, "]\nuvwxyz\n") {
		t.Fatalf("%q %+v", out, st)
	}
	// A line longer than the head is not shown in it at all: the tail
	// shows its end.
	out, st = run(t, Options{Limit: 20}, "0123456789", "abcdefghij", "KLMNOPQRST", " uvwxyz")
	if out != "\n[... 31 bytes, 0 lines omitted ...]\nuvwxyz\n" || st.OmittedBytes != 31 {
		t.Fatalf("%q %+v", out, st)
	}
	// Below the cap, a line the head could not take is shown whole, after
	// the head's lines.
	out, st = run(t, Options{Limit: 40}, "ab\n", "0123456789abcdefghijKLMNOPQRST\n")
	if out != "ab\n0123456789abcdefghijKLMNOPQRST\n" || st.Truncated {
		t.Fatalf("%q %+v", out, st)
	}
}

func TestRingWrapWithManySmallWrites(t *testing.T) {
	var chunks []string
	var want strings.Builder
	for i := 0; i < 5000; i++ {
		c := fmt.Sprintf("%d,", i)
		chunks = append(chunks, c)
		want.WriteString(c)
	}
	out, st := run(t, Options{Limit: 256}, chunks...)
	if !st.Truncated || !strings.HasSuffix(want.String(), strings.TrimSuffix(out[strings.LastIndex(out, "]\n")+2:], "\n")) {
		t.Fatalf("tail wrong: %q", out)
	}
	if !strings.HasSuffix(out, "4998,4999,\n") {
		t.Fatalf("latest bytes lost: %q", out[len(out)-20:])
	}
}

func TestMultibyteCutPoints(t *testing.T) {
	// No newlines and 3-byte characters: every cut must land between
	// characters, whatever the limit.
	input := strings.Repeat("€", 2000)
	for limit := 60; limit < 70; limit++ {
		out, st := run(t, Options{Limit: limit}, input)
		if !st.Truncated || !utf8.ValidString(out) {
			t.Fatalf("limit %d: invalid UTF-8 or not truncated: %q", limit, out)
		}
	}
}

func TestRedaction(t *testing.T) {
	secret := "s3cr3t-VALUE-1234567890"
	red := NewRedactor([]Secret{{"GITHUB_TOKEN", secret}, {"SHORT", "abc"}, {"DB_PASSWORD", "p@ss/w0rd+value!"}}, DefaultRules())
	tests := []struct {
		name   string
		chunks []string
		gone   []string
		want   []string
	}{
		{"plain", []string{"token=" + secret + "\n"}, []string{secret}, []string{"<redacted:GITHUB_TOKEN>"}},
		{"split across writes", []string{"x " + secret[:5], secret[5:12], secret[12:] + " y\n"}, []string{secret}, []string{"<redacted:GITHUB_TOKEN>"}},
		{"base64", []string{base64.StdEncoding.EncodeToString([]byte(secret)) + "\n"}, []string{base64.StdEncoding.EncodeToString([]byte(secret))}, []string{"<redacted:GITHUB_TOKEN>"}},
		{"url-encoded", []string{"https://u:" + url.QueryEscape("p@ss/w0rd+value!") + "@host/\n"}, []string{"p%40ss%2Fw0rd"}, []string{"<redacted:DB_PASSWORD>"}},
		{"hex", []string{hex.EncodeToString([]byte(secret)) + "\n"}, []string{hex.EncodeToString([]byte(secret))}, []string{"<redacted:GITHUB_TOKEN>"}},
		{"short values stay", []string{"abc abc\n"}, nil, []string{"abc abc"}},
		{"github pat pattern", []string{"ghp_" + strings.Repeat("A1b2", 9) + "\n"}, []string{"ghp_A1b2"}, []string{"<redacted:github-token>"}},
		{"anthropic pattern", []string{"key sk-ant-api03-" + strings.Repeat("xY9_", 10) + "\n"}, []string{"sk-ant-api03"}, []string{"<redacted:anthropic-key>"}},
		{"aws pattern", []string{"AKIAIOSFODNN7EXAMPLE\n"}, []string{"AKIAIOSFODNN7EXAMPLE"}, []string{"<redacted:aws-access-key>"}},
		{"generic high entropy", []string{`api_key = "q8Zr2LmN5vXb7TcY1kPw"` + "\n"}, []string{"q8Zr2LmN5vXb7TcY1kPw"}, []string{"api_key = \"<redacted:generic-secret>"}},
		{"generic low entropy stays", []string{`password = "aaaaaaaaaaaaaaaaaaaa"` + "\n"}, nil, []string{"aaaaaaaaaaaaaaaaaaaa"}},
		{"private key block", []string{"before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n", "AAAAAAAA\n-----END OPENSSH PRIVATE KEY-----\nafter\n"},
			[]string{"b3BlbnNzaC1rZXktdjEAAAAA", "BEGIN OPENSSH"}, []string{"before\n<redacted:private-key>\nafter\n"}},
		{"secret across the cap cut", []string{strings.Repeat("a", 90) + " " + secret + " " + strings.Repeat("b", 400) + "\n"}, []string{secret[:6]}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := run(t, Options{Limit: 200, Redactor: red}, tt.chunks...)
			for _, g := range tt.gone {
				if strings.Contains(out, g) {
					t.Errorf("%q survived: %q", g, out)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q in %q", w, out)
				}
			}
			if again := red.Redact(out); again != out {
				t.Errorf("not idempotent:\n%q\n%q", out, again)
			}
		})
	}
}

func TestRedactsBeforeTruncation(t *testing.T) {
	secret := "SECRETVALUE-abcdefgh-1234"
	red := NewRedactor([]Secret{{"K", secret}}, nil)
	// A long line with no separators: the forced cut must not split the
	// secret so that neither half is recognised.
	input := strings.Repeat("x", maxHold-10) + secret + strings.Repeat("y", 100) + "\n"
	out, _ := run(t, Options{Limit: 1 << 20, Redactor: red}, input)
	if strings.Contains(out, secret[:8]) {
		t.Fatalf("secret split by the forced cut survived")
	}
}

func TestNeutralise(t *testing.T) {
	tests := []struct {
		name, in string
		gone     []string
		want     []string
	}{
		{"OSC 52 clipboard", "\x1b]52;c;ZXZpbA==\x07\n", []string{"\x1b", "\x07"}, []string{"␛]52;c;ZXZpbA==␇"}},
		{"CSI query", "\x1b[6n\x1b[2J\n", []string{"\x1b"}, []string{"␛[6n"}},
		{"bidi override", "a\u202eb\n", []string{"\u202e"}, []string{`\u202e`}},
		{"C1 control", "a\u009bb\n", []string{"\u009b"}, []string{`\u009b`}},
		{"bare CR", "safe\revil\n", []string{"\revil"}, []string{"safe␍evil"}},
		{"CRLF kept", "a\r\nb\n", nil, []string{"a\r\nb"}},
		{"NUL and invalid UTF-8", "a\x00b\xff\xfec\n", []string{"\x00", "\xff"}, []string{"a␀b\\xff\\xfec"}},
		// Marked where the runner acts: at a line's start. The rest of the
		// line is kept, and "::" elsewhere too.
		{"workflow commands", "::add-mask::x\n  ::stop-commands::tok\n##[set-output name=a]b\nok :: here\n", []string{"\n::", "\n  ::", "##["},
			[]string{workflowPrefix + "::add-mask::x\n", workflowPrefix + "  ::stop-commands::tok\n", workflowPrefix + "##\\[set-output", "\nok :: here\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := run(t, Options{Limit: 1 << 16}, tt.in)
			for _, g := range tt.gone {
				if strings.Contains(out, g) {
					t.Errorf("%q survived in %q", g, out)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q in %q", w, out)
				}
			}
			raw, _ := run(t, Options{Limit: 1 << 16, Raw: true}, tt.in)
			if raw != tt.in {
				t.Errorf("--raw changed bytes: %q", raw)
			}
		})
	}
}

func TestCeilingStopsOnce(t *testing.T) {
	stops := 0
	c := &Ceiling{Limit: 1000, Stop: func() { stops++ }}
	var sink bytes.Buffer
	a, b := NewStream(&sink, Options{Limit: 100, Ceiling: c}), NewStream(&sink, Options{Limit: 100, Ceiling: c})
	for i := 0; i < 100; i++ {
		_, _ = a.Write(bytes.Repeat([]byte("x"), 10))
		_, _ = b.Write(bytes.Repeat([]byte("y"), 10))
	}
	sa, sb := a.Close(), b.Close()
	if stops != 1 || !c.Hit() || !sa.Truncated || sa.BytesIn != 1000 || sb.BytesIn != 1000 {
		t.Fatalf("stops %d hit %v stats %+v %+v", stops, c.Hit(), sa, sb)
	}
	if !strings.Contains(sink.String(), "output ceiling of 1000 bytes") {
		t.Fatalf("no ceiling notice: %q", sink.String())
	}
}

func BenchmarkStreamPassThrough(b *testing.B) {
	red := NewRedactor([]Secret{{"GITHUB_TOKEN", "ghp_" + strings.Repeat("x", 36)}, {"K", "another-secret-value"}}, DefaultRules())
	line := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", 2) + "\n")
	chunk := bytes.Repeat(line, (32<<10)/len(line))
	b.SetBytes(int64(len(chunk)))
	s := NewStream(nil, Options{Redactor: red})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _ = s.Write(chunk)
	}
	s.Close()
}

// BenchmarkCleanBlock measures redaction plus neutralising, the work done on
// what is shown (the head as it streams, the tail at the end).
func BenchmarkCleanBlock(b *testing.B) {
	red := NewRedactor([]Secret{{"GITHUB_TOKEN", "ghp_" + strings.Repeat("x", 36)}, {"K", "another-secret-value"}}, DefaultRules())
	line := []byte(`File "/usr/lib/python3.11/site-packages/widgets/core.py", line 42, in render: the quick brown fox` + "\n")
	block := bytes.Repeat(line, (32<<10)/len(line))
	b.SetBytes(int64(len(block)))
	s := NewStream(nil, Options{Redactor: red})
	for i := 0; i < b.N; i++ {
		_, _ = s.neutralise(s.redact(block))
	}
}
