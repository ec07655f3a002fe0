package output

import (
	"strings"
	"testing"
)

func TestTextAndLine(t *testing.T) {
	name := "x\x1b]0;title\x07\x1b[2J\n::error title=forged::run me\r"
	for _, tt := range []struct {
		fn   func(string) string
		want string
	}{
		// One line: the "::" is not at its start, and the caller prints it
		// after its own words ("warning: ").
		{Line, `x␛]0;title␇␛[2J␊::error title=forged::run me␍`},
		{Text, "x␛]0;title␇␛[2J\n" + workflowPrefix + `::error title=forged::run me␍`},
	} {
		got := tt.fn(name)
		if got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
		if again := tt.fn(got); again != got {
			t.Errorf("not idempotent: %q then %q", got, again)
		}
	}
	if plain := "/ws/issues/ok.txt: renamed to .git.quarantined-by-triage-sandbox-x"; Line(plain) != plain {
		t.Errorf("plain text changed: %q", Line(plain))
	}
	if strings.Contains(Line("a\nb"), "\n") {
		t.Error("Line kept a newline")
	}
}
