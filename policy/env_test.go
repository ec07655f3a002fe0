package policy

import (
	"slices"
	"strings"
	"testing"
)

// TestEnvScreensCredentialShapes: a wildcard (TRIAGE_* in the reproducer's
// allow-list, PIXI_* in [sandbox] env) never passes a secret-shaped name or
// value, an exact name in [sandbox] env does with a warning, and `policy`
// says which rule or pattern decided each variable.
func TestEnvScreensCredentialShapes(t *testing.T) {
	cfg := workspace(t, "[sandbox]\nenv = [\"PIXI_*\", \"TRIAGE_DEPLOY_TOKEN\", \"TRIAGE_COMMIT\"]\n")
	const sha = "3f786850e387550fdab836ed7d6dc881de23001b"
	host := fakeHost(t,
		"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "TERM=xterm-256color", "TZ=UTC",
		"HOME=/home/alice", "PWD=/home/alice", "SHLVL=1",
		"TRIAGE_ISSUE=https://github.com/octo-org/widgets/issues/7",
		"TRIAGE_REPO=octo-org/widgets-frontend-service",
		"TRIAGE_TOKENIZER_DIR=/opt/tokenizers", "TRIAGE_KEYBOARD_LAYOUT=us",
		"PIXI_PROJECT_NAME=widgets",
		// Secret-shaped names the old exact-word rule let through.
		"TRIAGE_APITOKEN=canary-apitoken",
		"TRIAGE_GHPAT=canary-ghpat",
		"TRIAGE_PRIVKEY=canary-privkey",
		"TRIAGE_DATABASE_URL=postgres://app:canary@db.internal/app",
		// Innocent names, secret values.
		"TRIAGE_RUN_ID=ghp_R2d9xQ7mPz4LkT8vNw3yB6cJ1hF5sGa0eU2i",
		"TRIAGE_HOOK=https://bot:canary@hooks.example.com/in",
		"PIXI_CACHE_ID=sk-proj-4fJk2LmN8pQ1rS5tU7vW9xY0zA3bC6dE",
		// Named exactly in [sandbox] env: passed on purpose.
		"TRIAGE_DEPLOY_TOKEN=passed-on-purpose",
		"TRIAGE_COMMIT="+sha,
	)
	p, err := Build(cfg, "reproducer", host, Options{})
	must(t, err)

	withheld := []struct{ name, reason, via string }{
		{"TRIAGE_APITOKEN", "name part APITOKEN contains TOKEN", "reproducer allow-list TRIAGE_*"},
		{"TRIAGE_GHPAT", "name part GHPAT ends with PAT", "reproducer allow-list TRIAGE_*"},
		{"TRIAGE_PRIVKEY", "name part PRIVKEY contains PRIVKEY", "reproducer allow-list TRIAGE_*"},
		{"TRIAGE_DATABASE_URL", "name contains DATABASE_URL", "reproducer allow-list TRIAGE_*"},
		{"TRIAGE_RUN_ID", "value looks like a secret: 40 chars, 5.2 bits/char", "reproducer allow-list TRIAGE_*"},
		{"TRIAGE_HOOK", "value is a URL with a password in it", "reproducer allow-list TRIAGE_*"},
		{"PIXI_CACHE_ID", "value looks like a secret: 40 chars, 5.1 bits/char", "[sandbox] env PIXI_*"},
	}
	passed := map[string]string{
		"PATH": "built for the sandbox", "LANG": "reproducer allow-list LANG",
		"TERM": "reproducer allow-list TERM", "TZ": "reproducer allow-list TZ",
		"TRIAGE_ISSUE": "reproducer allow-list TRIAGE_*", "TRIAGE_REPO": "reproducer allow-list TRIAGE_*",
		"TRIAGE_TOKENIZER_DIR": "reproducer allow-list TRIAGE_*", "TRIAGE_KEYBOARD_LAYOUT": "reproducer allow-list TRIAGE_*",
		"PIXI_PROJECT_NAME":   "[sandbox] env PIXI_*",
		"TRIAGE_DEPLOY_TOKEN": "[sandbox] env names it exactly, though name part TOKEN is the credential word TOKEN",
		"TRIAGE_COMMIT":       "[sandbox] env names it exactly, though value looks like a secret: 40 chars, 3.6 bits/char",
	}

	env := map[string]EnvVar{}
	for _, e := range p.Env {
		env[e.Name] = e
	}
	dropped := map[string]EnvDecision{}
	for _, d := range p.Dropped {
		dropped[d.Name] = d
	}
	explain := Explain(p)
	for _, w := range withheld {
		if e, ok := env[w.name]; ok {
			t.Errorf("%s passed (%s); it must be withheld: %s", w.name, e.Why, w.reason)
			continue
		}
		d, ok := dropped[w.name]
		if !ok {
			t.Errorf("%s neither passed nor withheld", w.name)
			continue
		}
		if !d.Credential {
			t.Errorf("%s withheld but not as a credential: its value would not be redacted", w.name)
		}
		if !strings.Contains(d.Why, w.reason) || !strings.Contains(d.Why, "matched "+w.via) {
			t.Errorf("%s: why = %q, want the reason %q and the pattern %q", w.name, d.Why, w.reason, w.via)
		}
		if !strings.Contains(explain, d.Why) {
			t.Errorf("policy output lacks the reason for %s:\n%s", w.name, explain)
		}
	}
	for name, why := range passed {
		e, ok := env[name]
		if !ok {
			t.Errorf("%s withheld (%s); it must pass", name, dropped[name].Why)
			continue
		}
		if !strings.HasPrefix(e.Why, why) {
			t.Errorf("%s: why = %q, want it to start with %q", name, e.Why, why)
		}
		if !strings.Contains(explain, e.Why) {
			t.Errorf("policy output lacks why %s passed:\n%s", name, explain)
		}
	}
	for _, name := range []string{"TRIAGE_DEPLOY_TOKEN", "TRIAGE_COMMIT"} {
		if !slices.ContainsFunc(p.Warnings, func(w string) bool {
			return strings.Contains(w, "credential-looking variable "+name+" (")
		}) {
			t.Errorf("passing %s by its exact name must warn: %q", name, p.Warnings)
		}
	}
	for _, e := range p.Env {
		if strings.Contains(e.Value, "canary") || strings.Contains(e.Value, "ghp_") || strings.Contains(e.Value, "sk-proj") {
			t.Errorf("a secret value leaked through %s", e.Name)
		}
	}

	// The agent allows no TRIAGE_*: still withheld, still marked credentials.
	a, err := Build(cfg, "agent", host, Options{})
	must(t, err)
	for _, w := range withheld {
		i := slices.IndexFunc(a.Dropped, func(d EnvDecision) bool { return d.Name == w.name })
		switch {
		case strings.HasPrefix(w.name, "PIXI_"):
			// [sandbox] env applies to both roles: screened as above.
		case i < 0:
			t.Errorf("agent: %s not withheld", w.name)
		case !a.Dropped[i].Credential || a.Dropped[i].Why != "not in the allow-list (and "+w.reason+")" &&
			!strings.HasPrefix(a.Dropped[i].Why, "not in the allow-list (and "+w.reason):
			t.Errorf("agent: %s = %+v, want a credential not in the allow-list because %s", w.name, a.Dropped[i], w.reason)
		}
	}
}
