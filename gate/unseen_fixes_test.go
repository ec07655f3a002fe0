package gate

import "testing"

// TestUnseenCorporaFixes holds the classes the unseen corpora's tuning
// sets found (testdata/corpus/unseen), each with its dangerous neighbours.
func TestUnseenCorporaFixes(t *testing.T) {
	cases := []shellCase{
		// A VAR=value prefix sets the variable for that command only.
		{`HOME=$(mktemp -d) node cli.js; rm -rf "$HOME"`, Deny, ruleRecursiveDelete},
		{`d=$(mktemp -d) true; rm -rf "$d"`, Deny, ruleRecursiveDelete},
		{`d=$(mktemp -d); d=/etc ls; rm -rf "$d"`, Allow, ""},
		{`HOME=$(mktemp -d); rm -rf "$HOME"`, Allow, ""},
		{`HOME=$(mktemp -d) rm -rf "$HOME"`, Deny, ruleRecursiveDelete},
		// A for loop over literal words: its variable is each of them.
		{`for target in /tmp/a /tmp/b; do rm -r -f "$target"; done`, Allow, ""},
		{`for d in build dist; do rm -rf "$d"/cache; done`, Allow, ""},
		{`for f in *.log; do rm -rf "$f"; done`, Allow, ""},
		{`for t in /tmp/a /; do rm -rf "$t"; done`, Deny, ruleRecursiveDelete},
		{`for t in a b; do rm -rf "$t"/../..; done`, Deny, ruleRecursiveDelete},
		{`for f in /etc/*; do rm -rf "$f"; done`, Deny, ruleRecursiveDelete},
		{`for t in build "$X"; do rm -rf "$t"; done`, Deny, ruleRecursiveDelete},
		{`for t in a b; do t=/; rm -rf "$t"; done`, Deny, ruleRecursiveDelete},
		{`for t; do rm -rf "$t"; done`, Deny, ruleRecursiveDelete},
		{`for f in ~/.ssh/*; do cat "$f"; done`, Deny, ruleSecretRead},
		{`for f in ~/.aws/config ~/.aws/credentials; do cp "$f" /tmp/; done`, Deny, ruleSecretRead},
		{`for f in a b; do cat "$f"; done`, Allow, ""},
		// xargs fed by echo of literal words appends those words.
		{"echo ok | xargs rm -f /tmp/test", Allow, ""},
		{"echo ok | xargs busybox rm -f /tmp/test", Allow, ""},
		{"echo a b | xargs -n1 rm -f", Allow, ""},
		{"echo / | xargs rm -rf", Deny, ruleRecursiveDelete},
		{"echo -rf / | xargs rm -f x", Deny, ruleRecursiveDelete},
		{"echo ok | xargs git reset --hard", Deny, ruleGitHistory},
		{"echo ok | xargs find . -delete", Deny, ruleRecursiveDelete},
		{"echo ok | xargs -0 rm -f x", Deny, ruleRecursiveDelete},
		{`printf '%s\n' -rf | xargs rm x /`, Deny, ruleRecursiveDelete},
		{`echo '"-rf"' | xargs rm x /`, Deny, ruleRecursiveDelete},
		// -I runs the one line echo prints in place of {} (issue 38).
		{"echo a | xargs -I{} rm -rf {}", Allow, ""},
		{"echo .. | xargs -I{} rm -rf {}", Deny, ruleRecursiveDelete},
		{"cat list | xargs rm -f x", Deny, ruleRecursiveDelete},
		// find: a test's value is not an action.
		{"find . -name -delete -print", Allow, ""},
		{"find . -path -delete -o -print", Allow, ""},
		{"find . -delete", Deny, ruleRecursiveDelete},
		{"find . -maxdepth 1 -delete", Deny, ruleRecursiveDelete},
		{"find . -type f -delete", Deny, ruleRecursiveDelete},
		{"find . -fprintf out '%p' -delete", Deny, ruleRecursiveDelete},
		// Installs the lists missed.
		{"bun upgrade", Deny, rulePackageInstall},
		{"bun upgrade --stable", Deny, rulePackageInstall},
		{"poetry lock", Deny, rulePackageInstall},
		{"poetry lock --regenerate", Deny, rulePackageInstall},
		{"bun exec 'ls -la'", Allow, ""},
		// Found by the held-out sets' one measurement (so no longer held out).
		{"uv lock --upgrade", Deny, rulePackageInstall},
		{"uv lock --upgrade-package requests", Deny, rulePackageInstall},
		{"uv lock -P requests", Deny, rulePackageInstall},
		{"uv lock", Allow, ""},
		{"uv lock --check", Allow, ""},
		{"poetry self lock", Deny, rulePackageInstall},
		{"gh ext remove owner/gh-x", Deny, rulePackageInstall},
		{"gh extension list", Allow, ""},
		// Version and tool managers (the second round's tuning sets).
		{"pyenv install 3.12", Deny, rulePackageInstall},
		{"pyenv install --list", Allow, ""},
		{"pyenv versions", Allow, ""},
		{"nvm install 20", Deny, rulePackageInstall},
		{"nvm use 20", Allow, ""},
		{"gcloud components update", Deny, rulePackageInstall},
		{"gcloud components list", Allow, ""},
		{"ghcup install ghc 9.4", Deny, rulePackageInstall},
		{"cabal install pkg", Deny, rulePackageInstall},
		{"cabal build", Allow, ""},
		{"stack install", Deny, rulePackageInstall},
		{"dotnet tool install -g dotnetsay", Deny, rulePackageInstall},
		{"dotnet add package Newtonsoft.Json", Deny, rulePackageInstall},
		{"dotnet add app.csproj package Newtonsoft.Json", Deny, rulePackageInstall},
		{"dotnet add reference ../lib/lib.csproj", Allow, ""},
		{"dotnet build", Allow, ""},
		{"az extension add -n ml", Deny, rulePackageInstall},
		{"helm plugin install https://x.io/p", Deny, rulePackageInstall},
		{"kubectl krew install ctx", Deny, rulePackageInstall},
		{"mix deps.get", Deny, rulePackageInstall},
		{"mix test", Allow, ""},
		{"deno install", Deny, rulePackageInstall},
		{"deno run main.ts", Allow, ""},
		{"emerge -av app-misc/foo", Deny, rulePackageInstall},
		{"emerge --search vim", Allow, ""},
		{"pkg_add curl", Deny, rulePackageInstall},
		{"cargo install --list", Allow, ""},
		// Found by the second held-out measurement (so no longer held out).
		{"brew autoremove", Deny, rulePackageInstall},
		{"brew autoremove -n", Allow, ""},
		{"brew install -n jq", Allow, ""},
		{"fvm install 3.10.0", Deny, rulePackageInstall},
		{"kerl build-install 26.0 26.0 ~/kerl/26.0", Deny, rulePackageInstall},
		{"gopass mounts", Allow, ""},
		{"gopass sync", Allow, ""},
		{"gopass new", Allow, ""},
		{"gopass show db/prod", Deny, ruleCredentialHelper},
		{"gopass db/prod", Deny, ruleCredentialHelper},
		{"pass grep token", Deny, ruleCredentialHelper},
		{"poetry show --tree", Allow, ""},
	}
	g := mustGate(t, testConfig())
	for _, c := range cases {
		d := g.CheckShell(c.script)
		if d.Verdict != c.want || c.rule != "" && d.Rule != c.rule {
			t.Errorf("CheckShell(%q) = %s (rule %q: %s); want %s (rule %q)", c.script, d.Verdict, d.Rule, d.Reason, c.want, c.rule)
		}
	}
}
