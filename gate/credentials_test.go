package gate

import (
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestSecretReadCoversTheCredentialList: the secret-read rule and its
// description follow profiles.CredentialPaths, the list the policy makes
// unreadable: every entry under a home directory is denied when a command
// names it (or something inside it), and the description names it.
func TestSecretReadCoversTheCredentialList(t *testing.T) {
	g := mustGate(t, testConfig())
	var desc string
	for _, r := range DefaultRules() {
		if r.Name == ruleSecretRead {
			desc = r.Description
		}
	}
	n := 0
	for _, p := range profiles.CredentialPaths() {
		rel, ok := strings.CutPrefix(p, "~/")
		if !ok {
			continue
		}
		n++
		if !strings.Contains(desc, " "+rel+",") && !strings.Contains(desc, " "+rel+" (") {
			t.Errorf("the secret-read description does not name %s", rel)
		}
		for _, arg := range []string{"'" + p + "'", "'" + p + "/x'", `"$HOME/` + rel + `"`, "'/home/bob/" + rel + "'"} {
			d := g.CheckShell("cat " + arg)
			named, _ := strings.CutPrefix(d.Reason, "it names the credential path ")
			// "~/.config/Bitwarden CLI" is inside "~/.config/Bitwarden", which may be named instead.
			if d.Verdict != Deny || d.Rule != ruleSecretRead || !strings.HasPrefix(p, named) || !slices.Contains(profiles.CredentialPaths(), named) {
				t.Errorf("cat %s: %s %s %q; want deny by %s naming %s", arg, d.Verdict, d.Rule, d.Reason, ruleSecretRead, p)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d home-relative credential paths; the list moved?", n)
	}
	// The same names in a project's own tree are not credentials.
	for _, script := range []string{"cat .docker/config.json", "ls ws/.ssh", "cat /ws/Library/Keychains/x", "cat snap/firefox"} {
		if d := g.CheckShell(script); d.Verdict != Allow {
			t.Errorf("%s: %s %s; want allow (not under a home directory)", script, d.Verdict, d.Rule)
		}
	}
}
