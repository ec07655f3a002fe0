package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"unicode"
)

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(fixture); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"[sandbox]\nnetwrk = false\nbackend = \"podman\"\n",
		"[sandbox.agent]\nwritable = [\"/etc\", 3]\n[sandbox.agent.guard]\nx = 1\n",
		"[sandbox]\nmemory = \"1.5g\"\nset_env = { \"a\\nb\" = 1 }\nenv = [\"[\"]\n",
		"sandbox = { agent = { imag = \"\"\"\nx\"\"\" } }\n",
		"[sandbox\n",
		"a = \"\"\"\n[sandbox]\nx = 1\n\"\"\"\n[sandbox.guard]\nmin_safe = nan\n",
		"\"\\u2028\" = 1\n[sandbox]\n\"\\u0085\\r\" = 2\n",
		"[sandbox.mcp]\nmax_sessions = 65\nmax_starting = 1.5\n[sandbox.mcp.x]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("triage.toml", data, "/ws")
		if err == nil {
			if file == nil {
				t.Fatal("nil File without an error")
			}
			return
		}
		lines := strings.Split(err.Error(), "\n")
		ps := Problems(err)
		if len(ps) != len(lines) {
			t.Fatalf("%d problems but %d lines: %q", len(ps), len(lines), err.Error())
		}
		last := bytes.Count(data, []byte("\n")) + 1
		for _, p := range ps {
			if p.Line < 0 || p.Line > last {
				t.Fatalf("line %d outside the file (%d lines): %v", p.Line, last, p)
			}
		}
		for _, l := range lines {
			if strings.TrimSpace(l) == "" {
				t.Fatalf("empty line in error %q", err.Error())
			}
			if strings.ContainsFunc(l, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\u0085' }) {
				t.Fatalf("line %q is not single-line text", l)
			}
		}
	})
}

// FuzzIndexLines runs the line scanner on any text (Parse only runs it on
// valid TOML): it must neither panic nor hang.
func FuzzIndexLines(f *testing.F) {
	for _, s := range []string{"", "[", "a = \"\"\"", "a = [{", "x = {a.b = [1, {c = '''", "\"\\", "[[a]\n.b = 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ix := indexLines(s)
		for _, l := range ix {
			if l < 1 || l > strings.Count(s, "\n")+1 {
				t.Fatalf("line %d out of range", l)
			}
		}
	})
}
