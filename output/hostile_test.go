package output

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// runnerParses models, widely, what actions/runner (ActionCommand.TryParseV2
// and TryParse) and the Azure agent would try to parse as a command in one
// line of output, with comparisons that skip ignorable characters (ICU):
// after trimming .NET white space from the start the line starts with
// "::" and holds another "::" (IndexOf("::", 2); with ignorables it may
// share the first one's second colon), or it holds "##[" or "##vso[" (any
// case) anywhere.
func runnerParses(line string) bool {
	return modelV2(line) || modelLegacy(line)
}

func modelV2(line string) bool {
	t := strings.TrimLeftFunc(stripIgnorable(line), dotnetSpace)
	return strings.HasPrefix(t, "::") && strings.Contains(t[1:], "::")
}

func modelLegacy(line string) bool {
	l := []byte(stripIgnorable(line))
	for i, c := range l {
		if c >= 'A' && c <= 'Z' {
			l[i] = c + 'a' - 'A'
		}
	}
	return strings.Contains(string(l), "##[") || strings.Contains(string(l), "##vso[")
}

// runnerLines splits output the way the runner reads it (StreamReader:
// \n, \r\n and a bare \r end a line).
func runnerLines(s string) []string {
	return strings.FieldsFunc(strings.ReplaceAll(s, "\r\n", "\n"), func(r rune) bool { return r == '\n' || r == '\r' })
}

func TestWorkflowCommandRules(t *testing.T) {
	type tc struct {
		name, line string
		marked     bool
	}
	var tests []tc
	// Every character .NET's String.Trim removes, plus BOM and U+180E.
	spaces := []rune{0x09, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff, 0x180e}
	for r := rune(0x2000); r <= 0x200a; r++ {
		spaces = append(spaces, r)
	}
	for _, r := range spaces {
		tests = append(tests,
			tc{fmt.Sprintf("U+%04X then ::", r), string(r) + "::add-mask::x", true},
			tc{fmt.Sprintf("U+%04X twice, a space, then ::", r), string(r) + " " + string(r) + "::set-output name=a::b", true})
	}
	tests = append(tests, []tc{
		{"plain ::", "::add-mask::x", true},
		{"spaces and tabs", " \t ::stop-commands::tok", true},
		{"mixed C0 controls and white space", "\x01\t\x0b\x1b \u00a0::add-mask::x", true},
		{"NUL before ::", "\x00::add-mask::x", true},
		{"zero-width space before ::", "\u200b::add-mask::x", true},
		{"soft hyphen between the colons", ":\u00ad:add-mask::x", true},
		{"word joiner between the colons", ":\u2060:add-mask::x", true},
		{"legacy at the start", "##[add-mask]x", true},
		{"legacy after white space", "\u3000##[set-output name=a]b", true},
		{"legacy in the middle", "echo hello ##[set-output name=a]b", true},
		{"legacy at the end", "this line ends with ##[", true},
		{"legacy twice", "a##[debug]b ##[add-mask]c", true},
		{"legacy with an ignorable inside", "x #\u00ad#[add-mask]y", true},
		{"Azure form in the middle", "text ##vso[task.setvariable variable=a]b", true},
		{"legacy after a bare CR", "progress 10%\r##[add-mask]x", true},
		{"bare CR then ::", "progress 10%\r::add-mask::x", false}, // the ␍ picture keeps it one line
		{"stop-commands token", "::e9f1c2::", true},
		{"three colons", ":::", true}, // wide: IndexOf may share a colon when an ignorable is between
		{"ignorable between, then ::", ":\u00ad::x", true},
		{"C++ global scope at the start", "  ::std::vector<int> v;", true},
		{"IPv6 loopback in /etc/hosts", "::1 localhost ip6-localhost ip6-loopback", false},
		{"IPv6 mapped address", "::ffff:127.0.0.1", false},
		{"lone ::", "::", false},
		{":: then one colon", ":: a: b", false},
		{"pytest node id", "tests/test_calc.py::test_evaluate[2 * (3 + 4)-14] PASSED", false},
		{"C++ name", "std::vector<int>::iterator it;", false},
		{"Rust path", "error[E0433]: failed to resolve: use of undeclared crate `foo::bar`", false},
		{"colon, letter, colon", ":x:", false},
		{"colon space colon", ": :add-mask::x", false},
		{"text before ::", "x ::add-mask::y", false},
		{":: inside", "ok :: here", false},
		{"hash space hash bracket", "# #[add-mask]x", false},
		{"hash tab hash bracket", "#\t#[add-mask]x", false},
		{"one hash", "#[add-mask]x", false},
		{"hashes without bracket", "## heading [x]", false},
		{"markdown heading", "## Results", false},
		{"escaped already", `##\[add-mask]x`, false},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.line + "\n"
			out, _ := run(t, Options{Limit: 1 << 16}, in)
			if got := strings.HasPrefix(out, workflowPrefix); got != tt.marked {
				t.Errorf("marked = %v, want %v: %q", got, tt.marked, out)
			}
			for _, l := range runnerLines(out) {
				if runnerParses(l) {
					t.Errorf("the runner would parse %q", l)
				}
			}
			if !tt.marked && out != in && !strings.ContainsAny(in, "\x00\x01\r") {
				t.Errorf("changed although it is no command: %q", out)
			}
			once := Text(in)
			if twice := Text(once); twice != once {
				t.Errorf("not idempotent:\n%q\n%q", once, twice)
			}
			if raw, _ := run(t, Options{Limit: 1 << 16, Raw: true}, in); raw != in {
				t.Errorf("--raw changed bytes: %q", raw)
			}
		})
	}
}

// A line longer than a chunk: the decision is made on the whole line,
// whatever the chunks.
func TestWorkflowCommandAcrossChunks(t *testing.T) {
	tests := []struct {
		chunks []string
		want   string
	}{
		{[]string{"   ", "  ::add-mask::x\n"}, workflowPrefix + "     ::add-mask::x\n"},
		{[]string{"\u00a0:", ":add-mask::x\n"}, workflowPrefix + "\u00a0::add-mask::x\n"},
		{[]string{"::add-mask", "::x\n"}, workflowPrefix + "::add-mask::x\n"},
		{[]string{"::1 localhost", " ip6-localhost\n"}, "::1 localhost ip6-localhost\n"},
		{[]string{"text ##", "[add-mask]x\n"}, workflowPrefix + "text ##\\[add-mask]x\n"},
		{[]string{"text #", "#[add-mask]x\n"}, workflowPrefix + "text ##\\[add-mask]x\n"},
		{[]string{"text ##v", "so[task.setvariable variable=a]b\n"}, workflowPrefix + "text ##vso\\[task.setvariable variable=a]b\n"},
		{[]string{"tests/x.py:", ":test_y\n"}, "tests/x.py::test_y\n"},
	}
	for _, tt := range tests {
		out, _ := run(t, Options{Limit: 1 << 16}, tt.chunks...)
		if out != tt.want {
			t.Errorf("%q: got %q, want %q", tt.chunks, out, tt.want)
		}
	}
	// Through a stream: leading white space longer than the hold.
	chunk := strings.Repeat(" ", 4096)
	var chunks []string
	for i := 0; i < maxHold/len(chunk)+2; i++ {
		chunks = append(chunks, chunk)
	}
	chunks = append(chunks, "::add-mask::x\n")
	out, _ := run(t, Options{Limit: 1 << 20}, chunks...)
	for _, l := range runnerLines(out) {
		if runnerParses(l) {
			t.Errorf("the runner would parse %q", l[max(0, len(l)-60):])
		}
	}
}

// suffixAtStart reports the longest proper suffix (at least 4 bytes) of tok
// that s starts with.
func suffixAtStart(s, tok string) string {
	for k := 1; k <= len(tok)-4; k++ {
		if strings.HasPrefix(s, tok[k:]) {
			return tok[k:]
		}
	}
	return ""
}

func afterMarker(t *testing.T, out string) string {
	t.Helper()
	i := strings.Index(out, " lines omitted ...]\n")
	if i < 0 {
		t.Fatalf("no omission marker in %q", out[:min(len(out), 200)])
	}
	return out[i+len(" lines omitted ...]\n"):]
}

func TestTailNeverStartsInsideToken(t *testing.T) {
	tok := "tok_Q7zP3xLm9Kd2Vb8Nc1Rf6Hj4Ws0Ty5Ga2Ue" // 40 bytes
	input := strings.Repeat(tok, (1<<20)/len(tok))
	var chunks []string
	for i := 0; i < len(input); i += 4096 {
		chunks = append(chunks, input[i:min(len(input), i+4096)])
	}
	for _, tt := range []struct {
		name   string
		red    *Redactor
		chunks []string
	}{
		{"no redactor, 4 KiB writes", nil, chunks},
		{"no redactor, one write", nil, []string{input}},
		{"token is a secret, 4 KiB writes", NewRedactor([]Secret{{"TOK", tok}}, DefaultRules()), chunks},
		{"token is a secret, one write", NewRedactor([]Secret{{"TOK", tok}}, DefaultRules()), []string{input}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, st := run(t, Options{Limit: 64 << 10, Redactor: tt.red}, tt.chunks...)
			tail := afterMarker(t, out)
			if s := suffixAtStart(tail, tok); s != "" {
				t.Fatalf("the tail starts inside the token: %q", tail[:min(len(tail), 60)])
			}
			shown := strings.ReplaceAll(out, tok, "")
			if i := strings.Index(shown, tok[:8]); i >= 0 {
				t.Fatalf("part of the token shown: %q", shown[max(0, i-20):min(len(shown), i+60)])
			}
			if i := strings.Index(shown, tok[len(tok)-8:]); i >= 0 {
				t.Fatalf("part of the token shown: %q", shown[max(0, i-20):min(len(shown), i+60)])
			}
			if tt.red == nil {
				// One token from start to end: nothing of it is shown, all of
				// it is counted.
				head := out[:strings.Index(out, "\n[... ")]
				if int64(len(head)+len(tail))+st.OmittedBytes != int64(len(input)) || tail != "" || head != "" {
					t.Fatalf("head %d tail %d omitted %d of %d", len(head), len(tail), st.OmittedBytes, len(input))
				}
			}
		})
	}
}

func TestTailCutCountsStayExact(t *testing.T) {
	// Words and long tokens, no newlines: the cut lands inside a token for
	// most limits.
	var b strings.Builder
	for i := 0; b.Len() < 50000; i++ {
		fmt.Fprintf(&b, "w%d %s ", i, strings.Repeat(string(rune('a'+i%26)), 10+i%300))
	}
	input := b.String()
	for limit := 1000; limit < 1400; limit += 7 {
		out, st := run(t, Options{Limit: limit}, input)
		head, rest, _ := strings.Cut(out, "\n[... ")
		_, tail, _ := strings.Cut(rest, "...]\n")
		tail = strings.TrimSuffix(tail, "\n") // the last line is shown with a newline
		if !strings.HasPrefix(input, head) || !strings.HasSuffix(input, tail) {
			t.Fatalf("limit %d: head/tail not a prefix/suffix", limit)
		}
		if int64(len(head)+len(tail))+st.OmittedBytes != int64(len(input)) {
			t.Fatalf("limit %d: head %d tail %d omitted %d input %d", limit, len(head), len(tail), st.OmittedBytes, len(input))
		}
		if n := len(head); n > 0 && runChar[head[n-1]] && runChar[input[n]] {
			t.Fatalf("limit %d: head ends inside a token: %q", limit, head[max(0, n-20):])
		}
		if start := len(input) - len(tail); len(tail) > 0 && runChar[input[start-1]] && runChar[tail[0]] {
			t.Fatalf("limit %d: tail starts inside a token: %q", limit, tail[:min(20, len(tail))])
		}
	}
}

func TestHeadNeverEndsInsideToken(t *testing.T) {
	token := strings.Repeat("Zx9", 70) // 210 bytes
	out, st := run(t, Options{Limit: 100}, "abc\ndef "+token+" tail end")
	if !strings.HasPrefix(out, "abc\n\n[... ") {
		t.Fatalf("head: %q", out)
	}
	if !strings.HasSuffix(out, "]\ntail end\n") || st.OmittedBytes != int64(len("def ")+len(token)+1) {
		t.Fatalf("tail or count: %q %+v", out, st)
	}
}

// A secret made of other characters than token ones: the cut may fall
// right after its space; the tail must still not show the rest of it.
func TestTailStartsAfterStraddlingSecret(t *testing.T) {
	secret := "p@ss w0rd!value-1234"
	red := NewRedactor([]Secret{{"DB_PASSWORD", secret}}, nil)
	line1 := strings.Repeat("h", 99) + "\n" // fills the head exactly
	filler := strings.Repeat("filler ", 200)
	rest := " " + strings.Repeat("z", 84)
	out, _ := run(t, Options{Limit: 200, Redactor: red}, line1+filler+secret+rest)
	// The tail shows the last 100 bytes: it would start at "w0rd!...".
	if strings.Contains(out, "w0rd") || strings.Contains(out, "value-1234") {
		t.Fatalf("part of the secret shown: %q", out)
	}
	if !strings.HasSuffix(out, rest+"\n") {
		t.Fatalf("tail lost: %q", out)
	}
}

// The forced cut of a long line (no newline for more than maxHold bytes)
// must not split a secret between two redaction passes.
func TestForcedCutDoesNotSplitSecret(t *testing.T) {
	t.Run("secret with a space", func(t *testing.T) {
		secret := "p@ss w0rd!value-1234"
		red := NewRedactor([]Secret{{"DB_PASSWORD", secret}}, nil)
		n := maxHold + 100
		at := n - holdBack // where the cut is first tried
		pre := strings.Repeat("y ", at)[:at-5]
		chunk := pre + secret
		chunk += strings.Repeat("q ", n)[:n-len(chunk)]
		out, _ := run(t, Options{Limit: 1 << 20, Redactor: red}, chunk, "end\n")
		if strings.Contains(out, "w0rd") || strings.Contains(out, "p@ss") {
			t.Fatalf("secret split by the forced cut survived")
		}
		if !strings.Contains(out, "<redacted:DB_PASSWORD>") {
			t.Fatalf("no marker")
		}
	})
	t.Run("run of secrets longer than the hold", func(t *testing.T) {
		tok := "tok_Q7zP3xLm9Kd2Vb8Nc1Rf6Hj4Ws0Ty5Ga2Ue"
		red := NewRedactor([]Secret{{"TOK", tok}}, nil)
		input := "start " + strings.Repeat(tok, (200<<10)/len(tok)) + " end\n"
		var chunks []string
		for i := 0; i < len(input); i += 4096 {
			chunks = append(chunks, input[i:min(len(input), i+4096)])
		}
		out, st := run(t, Options{Limit: 4 << 20, Redactor: red}, chunks...)
		shown := strings.ReplaceAll(out, "<redacted:TOK>", "")
		if strings.Contains(shown, tok[:8]) || strings.Contains(shown, tok[len(tok)-8:]) {
			t.Fatalf("part of a secret shown: %q", shown[:min(len(shown), 200)])
		}
		if shown != "start  end\n" || st.Truncated {
			t.Fatalf("shown %q, %+v", shown[:min(len(shown), 200)], st)
		}
	})
}

func TestRedactionCoverage(t *testing.T) {
	secret := "s3cr3t-VALUE-1234567890" // 23 bytes
	special := "p@ss/w0rd+value!~ é"    // URL-encoding changes it
	ten := "Ab3dE6gH9k"                 // 10 bytes: every base64 offset
	eight := "Zq8Wx2Lp"                 // 8 bytes: the value's own encoding only
	red := NewRedactor([]Secret{{"S", secret}, {"P", special}, {"TEN", ten}, {"EIGHT", eight}, {"SHORT", "abc1234"}}, nil)
	b64 := func(enc *base64.Encoding, pre int, v, post string) string {
		return enc.EncodeToString([]byte(strings.Repeat("\x00", pre) + v + post))
	}
	reverse := func(s string) string {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r)
	}
	caught := map[string]string{
		"exact":              secret,
		"reversed":           reverse(secret),
		"reversed non-ASCII": reverse(special),
		"hex":                hex.EncodeToString([]byte(secret)),
		"HEX":                strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"query-escaped":      url.QueryEscape(special),
		"path-escaped":       url.PathEscape(special),
		"base64 alone":       base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64 raw url":     base64.RawURLEncoding.EncodeToString([]byte(special)),
		// `echo $S | base64`: the unpadded form catches it too, as '\n'
		// has its top bits clear.
		"base64 of value\\n":  b64(base64.StdEncoding, 0, secret, "\n"),
		"8 bytes, alone":      base64.StdEncoding.EncodeToString([]byte(eight)),
		"8 bytes, raw alone":  base64.RawURLEncoding.EncodeToString([]byte(eight)),
		"10 bytes, offset 0":  b64(base64.StdEncoding, 0, ten, "tail!"),
		"10 bytes, offset 1":  b64(base64.StdEncoding, 1, ten, "tail!"),
		"10 bytes, offset 2":  b64(base64.URLEncoding, 2, ten, "tail!"),
		"hex of special":      hex.EncodeToString([]byte(special)),
		"value in a sentence": "the password is " + special + ", really",
	}
	encodings := map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding,
		"raw std": base64.RawStdEncoding, "raw url": base64.RawURLEncoding}
	for off := 0; off < 3; off++ {
		for encName, enc := range encodings {
			for vName, v := range map[string]string{"S": secret, "P": special} {
				caught[fmt.Sprintf("%s in %s base64 at offset %d", vName, encName, off)] = b64(enc, 3+off, v, "\xff\xfe more bytes")
			}
		}
	}
	for name, in := range caught {
		t.Run("caught/"+name, func(t *testing.T) {
			out := red.Redact(in)
			if !strings.Contains(out, "<redacted:") {
				t.Fatalf("not redacted: %q", out)
			}
			// What is left of a base64 blob is at most the characters that
			// also depend on the bytes around the value.
			for _, v := range []string{secret, special, ten, eight} {
				for _, form := range secretForms(v) {
					if strings.Contains(out, form) {
						t.Fatalf("form %q survived in %q", form, out)
					}
				}
			}
			if again := red.Redact(out); again != out {
				t.Fatalf("not idempotent: %q", again)
			}
		})
	}
	notCaught := map[string]string{
		"split by a space":           secret[:11] + " " + secret[11:],
		"split by another char":      secret[:11] + "|" + secret[11:],
		"split by a newline":         secret[:11] + "\n" + secret[11:],
		"upper-cased":                strings.ToUpper(secret),
		"shorter than 8":             "abc1234",
		"8 bytes at base64 offset 1": b64(base64.StdEncoding, 1, eight, "tail!"),
		"base32":                     "ONRWG4RTOQWVMQKMKVCS2MJSGM2DKNRXHA4TA===",
	}
	for name, in := range notCaught {
		t.Run("not caught/"+name, func(t *testing.T) {
			if out := red.Redact(in); out != in {
				t.Fatalf("coverage changed, update the comment in redact.go: %q -> %q", in, out)
			}
		})
	}
}

// A secret that holds a newline, written in two parts split at it: the
// first line must wait for the second to be redacted whole.
func TestSecretWithNewlineAcrossWrites(t *testing.T) {
	secret := "first-line-abc\nsecond-line-xyz"
	red := NewRedactor([]Secret{{"MULTI", secret}}, nil)
	out, _ := run(t, Options{Limit: 1 << 16, Redactor: red}, "before\nkey: first-line-abc\n", "second-line-xyz and after\n")
	if strings.Contains(out, "first-line") || strings.Contains(out, "second-line") {
		t.Fatalf("secret shown: %q", out)
	}
	if out != "before\nkey: <redacted:MULTI> and after\n" {
		t.Fatalf("%q", out)
	}
}

// Random lines over the characters that matter, written in random chunks:
// no line of the output may be read as a command, even by a comparison
// that skips ignorable characters, each line that needs no change comes
// back byte-identical, and cleaning the output again changes nothing.
func TestWorkflowCommandsRandom(t *testing.T) {
	alphabet := []string{":", ":", "#", "#", "[", "]", " ", "\t", "\u00a0", "\u3000", "\u00ad", "\u2060",
		"\u200b", "\x01", "\r", "\n", "a", "v", "s", "o", "V", "\\", "é"}
	rng := uint64(1)
	next := func(n int) int {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(n))
	}
	for iter := 0; iter < 20000; iter++ {
		var in strings.Builder
		for n := 1 + next(30); n > 0; n-- {
			in.WriteString(alphabet[next(len(alphabet))])
		}
		s := in.String()
		var chunks []string
		for len(s) > 0 {
			k := min(len(s), 1+next(8))
			chunks = append(chunks, s[:k])
			s = s[k:]
		}
		out, _ := run(t, Options{Limit: 1 << 16}, chunks...)
		checkCleaned(t, in.String(), out)
	}
}

// checkCleaned checks out, what a stream showed of in (no cap reached):
// no line of it is a command, lines that need no change are unchanged,
// and it is cleaned already.
func checkCleaned(t *testing.T, in, out string) {
	t.Helper()
	for _, l := range runnerLines(out) {
		if runnerParses(l) {
			t.Fatalf("input %q: output line %q would be parsed", in, l)
		}
	}
	if !strings.HasSuffix(in, "\n") {
		in += "\n" // a last line is shown with a newline
	}
	inLines, outLines := strings.SplitAfter(in, "\n"), strings.SplitAfter(out, "\n")
	if len(inLines) != len(outLines) {
		t.Fatalf("input %q: %d lines became %d: %q", in, len(inLines), len(outLines), out)
	}
	for i := range inLines {
		if asIs(inLines[i]) && outLines[i] != inLines[i] {
			t.Fatalf("input %q: line %q changed to %q", in, inLines[i], outLines[i])
		}
	}
	if again := Text(out); again != out {
		t.Fatalf("input %q: not idempotent:\n%q\n%q", in, out, again)
	}
}

// asIs reports whether a line (with its newline) needs no change: valid
// UTF-8, no control but tab (and CR before the newline), no C1 or
// invisible character, and no command by the model.
func asIs(line string) bool {
	body := line
	if b, ok := strings.CutSuffix(line, "\n"); ok {
		body = strings.TrimSuffix(b, "\r")
	}
	if !utf8.ValidString(body) || modelV2(body) || modelLegacy(body) {
		return false
	}
	for _, r := range body {
		if (r < 0x20 && r != '\t') || (r >= 0x7f && r <= 0x9f) || isInvisible(r) {
			return false
		}
	}
	return true
}
