package allow

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		entries []string
		want    []Rule
	}{
		{"host", []string{"pkgs.example.org"}, []Rule{{Host: "pkgs.example.org", From: "pkgs.example.org"}}},
		{"port", []string{"pkgs.example.org:8443"}, []Rule{{Host: "pkgs.example.org", Port: 8443, From: "pkgs.example.org:8443"}}},
		{"wildcard", []string{"*.cdn.example.org:443"}, []Rule{{Host: "*.cdn.example.org", Port: 443, From: "*.cdn.example.org:443"}}},
		{"upper case and trailing dot", []string{"PKGS.Example.ORG."}, []Rule{{Host: "pkgs.example.org", From: "PKGS.Example.ORG."}}},
		{"idna", []string{"bücher.example"}, []Rule{{Host: "xn--bcher-kva.example", From: "bücher.example"}}},
		{"duplicates dropped", []string{"a.example.org", "A.example.org"}, []Rule{{Host: "a.example.org", From: "a.example.org"}}},
		{"preset", []string{"npm"}, []Rule{{Host: "registry.npmjs.org", Port: 443, From: "preset npm"}}},
		{"go preset", []string{"go"}, []Rule{
			{Host: "proxy.golang.org", Port: 443, From: "preset go"},
			{Host: "sum.golang.org", Port: 443, From: "preset go"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.entries)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.entries, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Parse(%q) = %+v, want %+v", tt.entries, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("Parse(%q)[%d] = %+v, want %+v", tt.entries, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		entry string
		want  string // in the error
	}{
		{"", "empty"},
		{"*", "every host"},
		{"*.", "every host"},
		{"*.org", "top-level domain"},
		{"a.*.example.org", "wildcard"},
		{"*example.org", "wildcard"},
		{"127.0.0.1", "IP address"},
		{"127.0.0.1:443", "IP address"},
		{"::1", "IP address"},
		{"[::1]:443", "IP address"},
		{"fe80::1", "IP address"},
		{"127.1", "number"},
		{"0x7f.1", "number"},
		{"example.123", "number"},
		{"a..example.org", "empty label"},
		{".example.org", "empty label"},
		{"example.org..", "empty label"},
		{"example.org:0", "port"},
		{"example.org:65536", "port"},
		{"example.org:", "port"},
		{"example.org:08", "port"},
		{"example.org:+1", "port"},
		{"https://example.org", "not a host name"},
		{"example.org/simple", "not a host name"},
		{"user@example.org", "not a host name"},
		{"exa mple.org", "space"},
		{"example.org\n", "control"},
		{"under_score.example.org", "not a valid host name"},
		{"-lead.example.org", "not a valid host name"},
		{strings.Repeat("a", 64) + ".example.org", "not a valid host name"},
		{"localhost", "neither a preset"},
		{"pythonn", "neither a preset"},
		{"python:443", "preset takes no port"},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			rules, err := Parse([]string{"ok.example.org", tt.entry})
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.entry, rules)
			}
			var ee *EntryError
			if !errors.As(err, &ee) || ee.Index != 1 || ee.Entry != tt.entry {
				t.Fatalf("Parse(%q): error %v does not name entry 2", tt.entry, err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "network entry 2") {
				t.Errorf("Parse(%q): error %q, want it to say %q and name entry 2", tt.entry, err, tt.want)
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("Parse(%q): error is not one line: %q", tt.entry, err)
			}
		})
	}
}

func TestParseReportsEveryBadEntry(t *testing.T) {
	_, err := Parse([]string{"*", "ok.example.org", "10.0.0.1"})
	if err == nil || !strings.Contains(err.Error(), "entry 1") || !strings.Contains(err.Error(), "entry 3") {
		t.Fatalf("Parse: %v, want entries 1 and 3 named", err)
	}
}

func TestPresets(t *testing.T) {
	for name, entries := range Presets() {
		rules, err := Parse([]string{name})
		if err != nil || len(rules) != len(entries) || len(entries) == 0 {
			t.Errorf("preset %s: %v (%d rules for %d entries)", name, err, len(rules), len(entries))
		}
		for _, r := range rules {
			if r.Port != 443 || strings.HasPrefix(r.Host, "*") {
				t.Errorf("preset %s: %+v is not one HTTPS host", name, r)
			}
		}
	}
	for _, want := range []string{"python", "npm", "go", "crates"} {
		if _, ok := Presets()[want]; !ok {
			t.Errorf("preset %s missing", want)
		}
	}
	Presets()["npm"][0] = "evil.example" // a copy: the table is not changed
	if Presets()["npm"][0] != "registry.npmjs.org:443" {
		t.Error("Presets returned the table itself")
	}
}

func TestMatch(t *testing.T) {
	rules, err := Parse([]string{"pkgs.example.org", "*.cdn.example.org:443", "alt.example.org:8080"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"pkgs.example.org", 443, true},
		{"pkgs.example.org", 80, true},
		{"PKGS.example.org.", 443, true},
		{"pkgs.example.org", 8443, false},
		{"x.pkgs.example.org", 443, false},
		{"example.org", 443, false},
		{"evilpkgs.example.org", 443, false},
		{"a.cdn.example.org", 443, true},
		{"a.b.cdn.example.org", 443, true},
		{"a.cdn.example.org", 80, false},
		{"cdn.example.org", 443, false},
		{"xcdn.example.org", 443, false},
		{"alt.example.org", 8080, true},
		{"alt.example.org", 443, false},
		{"pkgs.example.org.evil.invalid", 443, false},
		{"pkgs.example.org\x00", 443, false},
		{"", 443, false},
		{"127.0.0.1", 443, false},
	}
	for _, tt := range tests {
		r, ok := Match(rules, tt.host, tt.port)
		if ok != tt.want {
			t.Errorf("Match(%q, %d) = %+v, %v; want %v", tt.host, tt.port, r, ok, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"pkgs.example.org", "*.a.example:443", "python", "[::1]:1", "bücher.example.", "a..b", "*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		rules, err := Parse([]string{entry})
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !utf8.ValidString(err.Error()) {
				t.Fatalf("error for %q is not one valid line: %q", entry, err)
			}
			return
		}
		for _, r := range rules {
			host := strings.TrimPrefix(r.Host, "*.")
			if host == "" || host == "*" || strings.ContainsAny(host, "*:[]/ ") || !strings.Contains(host, ".") {
				t.Fatalf("Parse(%q) gave rule %+v", entry, r)
			}
			if n, err := Normalize(host); err != nil || n != host {
				t.Fatalf("Parse(%q) gave rule %+v that is not normal (%q, %v)", entry, r, n, err)
			}
			if r.Port < 0 || r.Port > 65535 {
				t.Fatalf("Parse(%q) gave port %d", entry, r.Port)
			}
			if !strings.HasPrefix(r.Host, "*.") {
				port := r.Port
				if port == 0 {
					port = 443
				}
				if _, ok := Match(rules, host, port); !ok {
					t.Fatalf("Parse(%q) gave %+v that does not match its own host", entry, r)
				}
			}
		}
	})
}
