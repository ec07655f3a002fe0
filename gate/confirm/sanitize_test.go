package confirm

import (
	"os/exec"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSanitize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "ls -la /tmp", 0, "ls -la /tmp"},
		{"unicode text kept", "grep 'naïve 日本' é", 0, "grep 'naïve 日本' é"},
		{"newline", "a\nb", 0, "a⏎b"},
		{"carriage return and CSI", "x\x1b[2K\rRun it? [y]es", 0, "x␛[2K␍Run it? [y]es"},
		{"OSC title with BEL", "\x1b]0;title\a", 0, "␛]0;title␇"},
		{"OSC payload stays visible", "echo \x1b]0;; rm -rf ~ ;\x1b\\", 0, "echo ␛]0;; rm -rf ~ ;␛\\"},
		{"DCS", "\x1bPq#0\x1b\\", 0, "␛Pq#0␛\\"},
		{"tab, NUL, DEL", "a\tb\x00c\x7f", 0, "a␉b␀c␡"},
		{"C1 CSI and OSC", "\u009b31m\u009d0;x", 0, "\uFFFD31m\uFFFD0;x"},
		{"invalid UTF-8", "a\xffb\xc3", 0, "a\uFFFDb\uFFFD"},
		{"RLO", "ls \u202eexe.txt", 0, "ls \uFFFDexe.txt"},
		{"bidi embeddings and isolates", "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069", 0, strings.Repeat("\uFFFD", 8)},
		{"zero width", "r\u200bm \u200c\u200d\u2060\ufeff", 0, "r\uFFFDm \uFFFD\uFFFD\uFFFD\uFFFD"},
		{"LRM RLM ALM soft hyphen", "\u200e\u200f\u061c\u00ad", 0, strings.Repeat("\uFFFD", 4)},
		{"non-ASCII spaces and separators", "a\u00a0b\u3000c\u2028d\u2029", 0, "a\uFFFDb\uFFFDc\uFFFDd\uFFFD"},
		{"blank-looking letters", "\u3164\u2800\u115f", 0, strings.Repeat("\uFFFD", 3)},
		{"variation selector", "a\ufe0f", 0, "a\uFFFD"},
		{"tag characters", "a\U000E0041", 0, "a\uFFFD"},
		{"private use", "\ue000", 0, "\uFFFD"},
		{"two combining marks kept", "e\u0301\u0302", 0, "e\u0301\u0302"},
		{"zalgo run capped", "e" + strings.Repeat("\u0301", 9) + "x", 0, "e\u0301\u0301\uFFFDx"},
		{"no cut at max", "abcd", 4, "abcd"},
		{"cut keeps head and tail", "abcdefghij", 4, "ab …[6 characters cut]… ij"},
		{"odd max", "abcdefghij", 5, "abc …[5 characters cut]… ij"},
		{"cut counts sanitized runes", strings.Repeat("\x1b", 6), 4, "␛␛ …[2 characters cut]… ␛␛"},
		{"cut after sanitizing never splits a sequence", "\x1b[31mred", 3, "␛[ …[5 characters cut]… d"},
		{"runes not bytes", "日本語日本語", 2, "日 …[4 characters cut]… 語"},
		{"max 0 is no limit", strings.Repeat("x", 5000), 0, strings.Repeat("x", 5000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Sanitize(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("Sanitize(%q, %d)\n got %q\nwant %q", tt.in, tt.max, got, tt.want)
			}
			checkInert(t, got)
		})
	}
}

// checkInert fails when s holds anything a terminal would act on or that
// would not show.
func checkInert(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%q is not valid UTF-8", s)
	}
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Cf, r) || (r != ' ' && !unicode.IsPrint(r)) {
			t.Errorf("%q contains %U", s, r)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "ls", "\x1b[2K\r", "\x1b]0;t\a", "\u202e", "e\u0301\u0301\u0301", "\xff\xfe", "日本"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 100 || max < -1 {
			max %= 100
		}
		got := Sanitize(s, max)
		checkInert(t, got)
		full := Sanitize(s, 0)
		if max <= 0 {
			if got != full {
				t.Fatalf("max %d cut %q to %q", max, full, got)
			}
			return
		}
		n := utf8.RuneCountInString(full)
		if n <= max && got != full {
			t.Fatalf("cut %q (%d runes, max %d) to %q", full, n, max, got)
		}
		if n > max && !strings.Contains(got, " characters cut]… ") {
			t.Fatalf("silent cut of %q to %q", full, got)
		}
	})
}

func TestQuote(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{nil, ""},
		{[]string{"ls", "-la", "/tmp/a_b@c%d+e=f:g,h.i"}, "ls -la /tmp/a_b@c%d+e=f:g,h.i"},
		{[]string{"rm", "-rf x"}, "rm '-rf x'"},
		{[]string{""}, "''"},
		{[]string{"it's"}, `'it'\''s'`},
		{[]string{"sh", "-c", "echo $HOME; rm *"}, `sh -c 'echo $HOME; rm *'`},
		{[]string{"a\nb"}, "'a\nb'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.argv); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
	if Quote([]string{"rm", "-rf", "x"}) == Quote([]string{"rm", "-rf x"}) {
		t.Error("different argvs quote the same")
	}
}

// TestQuoteRoundTrip has a POSIX shell split Quote's output back.
func TestQuoteRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	argv := []string{"rm", "-rf x", "", "it's", `a"b\c`, "$(id)", "`id`", "*", "~", "a\nb", "日本", "-", "--"}
	out, err := exec.Command(sh, "-c", `eval "set -- $1"; printf '%s\0' "$@"`, "sh", Quote(argv)).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if strings.Join(got, "|") != strings.Join(argv, "|") || len(got) != len(argv) {
		t.Fatalf("round trip\n got %q\nwant %q", got, argv)
	}
}
