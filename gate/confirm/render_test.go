package confirm

import (
	"strings"
	"testing"
)

// hostile is a command written to fake the prompt: it erases the line,
// returns the cursor, writes its own question, sets the window title and
// reverses the text after it.
const hostile = "rm -rf ~\x1b[2K\rRun it? [y]es once / [s]ession / [N]o (30s)\n\x1b]0;title\a\u202eesrever\x1b[1A\x1b[31m\u200bok\x9b"

// frameLines returns the screen lines between the top and bottom of the
// command frame.
func frameLines(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(out, "\r\n")
	top, bottom := -1, -1
	for i, l := range lines {
		switch {
		case l == frameTop && top < 0:
			top = i
		case l == frameBottom && top >= 0:
			bottom = i
		}
	}
	if top < 0 || bottom < 0 {
		t.Fatalf("no command frame in %q", out)
	}
	return lines[top+1 : bottom]
}

func TestRenderPromptFrame(t *testing.T) {
	for _, cols := range []int{0, 30, 40, 80, 200} {
		out := renderPrompt(Prompt{Command: hostile + " " + strings.Repeat("/very/long/path ", 20), Rule: "rm\x1b[8m: deletes"}, cols, 30)
		frame := frameLines(t, out)
		if len(frame) < 2 {
			t.Fatalf("cols %d: %d frame lines", cols, len(frame))
		}
		width := cols
		if width <= 0 {
			width = defaultCols
		}
		for _, l := range frame {
			if !strings.HasPrefix(l, lineStart) && !strings.HasPrefix(l, lineContinue) {
				t.Errorf("cols %d: frame line without a border: %q", cols, l)
			}
			if strings.ContainsAny(l, "\x1b\a\r\n\u202e\u200b\u009b") {
				t.Errorf("cols %d: control left in %q", cols, l)
			}
			if w := cellWidth(l); w > width {
				t.Errorf("cols %d: line is %d cells wide: %q", cols, w, l)
			}
		}
		// The only real question is the last line, outside the frame.
		lines := strings.Split(out, "\r\n")
		if last := lines[len(lines)-1]; last != question(30) {
			t.Errorf("cols %d: last line %q, want the question", cols, last)
		}
		outside := 0
		for _, l := range lines {
			if strings.Contains(l, "Run it?") && !strings.HasPrefix(l, lineStart) && !strings.HasPrefix(l, lineContinue) {
				outside++
			}
		}
		if outside != 1 {
			t.Errorf("cols %d: %d question lines outside the frame", cols, outside)
		}
		if !strings.Contains(out, "␛[2K␍Run it?") || !strings.Contains(out, "␛]0;title␇") {
			t.Errorf("cols %d: neutralised command text not shown: %q", cols, out)
		}
		if !strings.Contains(out, "control or invisible characters") {
			t.Errorf("cols %d: no note about replaced characters", cols)
		}
	}
}

func TestRenderPromptCut(t *testing.T) {
	cmd := "echo " + strings.Repeat("a", CommandMax) + " tail-end"
	out := renderPrompt(Prompt{Command: cmd}, 80, 30)
	if !strings.Contains(out, "14 characters in the middle are not shown") {
		t.Errorf("no warning about the cut in the header")
	}
	joined := strings.Join(frameLines(t, out), "")
	if !strings.Contains(joined, "14 characters cut") || !strings.Contains(out, "tail-end") {
		t.Errorf("cut marker or tail missing")
	}
	if strings.Contains(out, "control or invisible") {
		t.Errorf("note about replaced characters for a plain command")
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		avail int
		want  []string // "+" marks a continuation line
	}{
		{"fits", "ls -la", 20, []string{"ls -la"}},
		{"empty", "", 20, []string{""}},
		{"hard wrap", "abcdefghij", 4, []string{"abcd", "+efgh", "+ij"}},
		{"newline starts a line", "a⏎b", 20, []string{"a⏎", "b"}},
		{"trailing newline", "a⏎", 20, []string{"a⏎"}},
		// The space before "/" must not vanish at the end of a line.
		{"space moves down", "/tmp/x /", 7, []string{"/tmp/x", "+ /"}},
		{"wide runes count double", "日本語", 4, []string{"日本", "+語"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range wrap([]rune(tt.text), tt.avail) {
				s := string(l.text)
				if l.cont {
					s = "+" + s
				}
				got = append(got, s)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("wrap(%q, %d) = %q, want %q", tt.text, tt.avail, got, tt.want)
			}
		})
	}
}
