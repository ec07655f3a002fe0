package gate

import (
	"strings"
	"testing"
)

func TestConfigDisableAndConfirmRules(t *testing.T) {
	cases := []struct {
		name   string
		cfg    Config
		script string
		want   Verdict
		rule   string
	}{
		{"default denies", Config{}, "git push", Deny, ruleGitRemote},
		{"disabled rule no longer applies", Config{Disable: []string{ruleGitRemote}}, "git push", Allow, ""},
		{"disabling one rule leaves the others", Config{Disable: []string{ruleGitRemote}}, "git push --force", Deny, ruleGitForcePush},
		{"disabled sudo still judges what it runs", Config{Disable: []string{ruleSudo}}, "sudo git push", Deny, ruleGitRemote},
		{"disabled sudo", Config{Disable: []string{ruleSudo}}, "sudo ls", Allow, ""},
		{"confirm rule", Config{ConfirmRules: []string{ruleGhWrite}}, "gh issue comment 1 -b x", Confirm, ruleGhWrite},
		{"confirm never weakens another rule's deny", Config{ConfirmRules: []string{ruleGitRemote}}, "git push -f", Deny, ruleGitForcePush},
		{"deny wins over confirm across commands", Config{ConfirmRules: []string{ruleGhWrite}}, "gh issue close 1; git push", Deny, ruleGitRemote},
		{"confirm kept when the rest is allowed", Config{ConfirmRules: []string{ruleGhWrite}}, "ls; gh issue close 1; echo ok", Confirm, ruleGhWrite},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := mustGate(t, c.cfg).CheckShell(c.script)
			if d.Verdict != c.want || d.Rule != c.rule {
				t.Errorf("CheckShell(%q) = %s (%s: %s); want %s (%s)", c.script, d.Verdict, d.Rule, d.Reason, c.want, c.rule)
			}
		})
	}
	d := mustGate(t, Config{ConfirmRules: []string{ruleGhWrite}}).CheckShell("gh issue close 1")
	want := "NEEDS CONFIRMATION: gh issue close changes GitHub (rule gh-write): `gh issue close 1` needs the operator's confirmation. Wait for it; do not retry it in another form."
	if d.Message() != want {
		t.Errorf("Message() = %q\nwant       %q", d.Message(), want)
	}
}

func TestConfigPatterns(t *testing.T) {
	cfg := Config{
		Deny:    []string{"gh issue close*", "*git push*", "make deploy*", "rm -rf*"},
		Confirm: []string{"python3 repros/*", "curl *", "x[0-9]?"},
		Disable: []string{ruleGhWrite, ruleGitRemote, ruleRecursiveDelete},
	}
	cases := []struct {
		script string
		want   Verdict
		rule   string
	}{
		{"gh issue close 1", Deny, "deny:gh issue close*"},
		{"gh  issue   close 1", Deny, "deny:gh issue close*"},       // normalised spacing
		{"/usr/bin/gh issue close 1", Deny, "deny:gh issue close*"}, // path stripped
		{"sudo -n gh issue close 1", Deny, ""},                      // looked through (sudo itself is denied too)
		{"git -C x push", Deny, "deny:*git push*"},                  // canonical form without -C
		{"nice git push", Deny, "deny:*git push*"},
		{"ls && make deploy prod", Deny, "deny:make deploy*"},
		{"rm -fr /", Allow, ""}, // user globs match text, not meaning; the rule is disabled
		{"rm -rf build", Deny, "deny:rm -rf*"},
		{`echo "rm -rf x"`, Allow, ""}, // the echo's argument is not a command
		{"python3 repros/3.py", Confirm, "confirm:python3 repros/*"},
		{"curl -s https://x", Confirm, "confirm:curl *"},
		{"x12", Confirm, "confirm:x[0-9]?"},
		{"x1", Allow, ""},
		{"curl x; git push", Deny, "deny:*git push*"},
		{"gh issue view 1", Allow, ""},
		// Raw text is matched too, as ai-triager did.
		{`echo "please git push now"`, Deny, "deny:*git push*"},
	}
	g := mustGate(t, cfg)
	for _, c := range cases {
		d := g.CheckShell(c.script)
		if d.Verdict != c.want || c.rule != "" && d.Rule != c.rule {
			t.Errorf("CheckShell(%q) = %s (%s); want %s (%s)", c.script, d.Verdict, d.Rule, c.want, c.rule)
		}
	}
	if d := g.CheckArgv([]string{"bash", "-c", "gh issue close 2"}); d.Rule != "deny:gh issue close*" {
		t.Errorf("argv with -c: %+v", d)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Disable: []string{"gh-wrte"}}, `[sandbox] gate_disable: unknown rule "gh-wrte" (known: gh-write, gh-credentials, `},
		{Config{ConfirmRules: []string{"nope"}}, `[sandbox] gate_confirm: unknown rule "nope" (known: gh-write, `},
		{Config{Disable: []string{"dynamic"}}, `[sandbox] gate_disable: unknown rule "dynamic"`},
		{Config{Disable: []string{ruleSudo}, ConfirmRules: []string{ruleSudo}}, `[sandbox] gate_confirm: rule "sudo" is also in gate_disable`},
		{Config{Deny: []string{"gh issue [close"}}, `[sandbox] deny: bad pattern "gh issue [close": the [ at 10 is never closed`},
		{Config{Deny: []string{"ok*", ""}}, `[sandbox] deny: bad pattern "": it is empty`},
		{Config{Confirm: []string{"x[z-a]"}}, `[sandbox] confirm: bad pattern "x[z-a]": range z-a is reversed`},
		{Config{Confirm: []string{"a\nb"}}, `[sandbox] confirm: bad pattern "a\nb": it holds a control character`},
		{Config{Role: "admin"}, `gate: unknown role "admin" (known: agent, reproducer)`},
		{Config{Workspace: "ws"}, `gate: workspace "ws" is not an absolute path`},
		{Config{Writable: []string{"/ws/a", "repros"}}, `gate: writable path "repros" is not absolute`},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if err == nil {
			t.Errorf("New(%+v) succeeded; want %q", c.cfg, c.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("New(%+v) error\n%q\nwant prefix\n%q", c.cfg, err.Error(), c.want)
		}
	}
	for _, name := range ruleNames() {
		if _, err := New(Config{Disable: []string{name}}); err != nil {
			t.Errorf("disabling %s: %v", name, err)
		}
	}
}
