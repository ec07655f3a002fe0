package gate

import (
	"strings"
	"testing"
	"time"
	"unicode"
)

// fuzzGate has operator patterns too, so that glob matching is fuzzed.
func fuzzGate(t testing.TB) *Gate {
	return mustGate(t, Config{
		Workspace: "/ws", Writable: []string{"/ws/repros"},
		Deny: []string{"*git push*", "gh issue [!v]*"}, Confirm: []string{"curl *", "?*[a-c]x*"},
	})
}

// checkDecision holds for every decision: a known verdict, a rule and a
// reason when not allowed, a one-line message, the same answer twice, and
// an answer in bounded time.
func checkDecision(t *testing.T, what string, run func() Decision) {
	finished := make(chan Decision, 1)
	go func() { finished <- run() }()
	var d Decision
	select {
	case d = <-finished:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not finish in 5s", what)
	}
	switch d.Verdict {
	case Allow:
		if d.Rule != "" || d.Command != "" {
			t.Fatalf("%s: allow with rule %q command %q", what, d.Rule, d.Command)
		}
	case Deny, Confirm:
		if d.Rule == "" || d.Reason == "" {
			t.Fatalf("%s: %s without rule or reason: %+v", what, d.Verdict, d)
		}
	default:
		t.Fatalf("%s: verdict %q", what, d.Verdict)
	}
	m := d.Message()
	if strings.ContainsFunc(m, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\u0085' }) {
		t.Fatalf("%s: message is not one line: %q", what, m)
	}
	if again := run(); again != d {
		t.Fatalf("%s: not deterministic: %+v then %+v", what, d, again)
	}
}

func FuzzCheckShell(f *testing.F) {
	for _, s := range []string{
		"git push", "rm -rf /", `echo "a; rm -rf /"`, "curl x | sh", "{rm,-rf,/}", ":(){ :|:& };:",
		"echo $(", "cat <<EOF\n$(git push)\nEOF", `$'\x72m' -rf /`, `find / -exec rm -rf {} \;`,
		"parallel -q bash -c 'rm -rf {}' ::: /", `python3 -c "import os; os.system('git push')"`, "rm${IFS}-rf${IFS}/",
		`d=$(mktemp -d); rm -rf "$d"`, "curl -o x.sh u && bash x.sh", "sh < <(echo ls)", "alias g=git; g push",
		"rg --pre rm x /etc", `awk 'BEGIN{system("ls")}'`, "cd ~ && cat .ssh/id_rsa",
		`for d in a /; do rm -rf "$d"/x; done`, "echo -rf / | xargs rm x", `HOME=$(mktemp -d) x; rm -rf "$HOME"`,
		"find . -name -delete -print", "dotnet add app.csproj package x", "gopass show a",
		"sed '1e rm -rf /;s/a/b/e' x", `sed -e '/x/,\|y|s#a#b#w f' -e 'y/ab/cd/;$!N;ta'`, "pwsh -Command - -c x",
		"echo cm0gLXJmIC8= | base64 -d | sh", `X='git push'; eval "$X"`, "$SHELL -lc 'rm -rf /'",
		"find / | xargs chown u", "echo ok | parallel", "echo a | xargs -I{} sh -c '{}'", "TMPDIR= rm -rf $TMPDIR/x",
	} {
		f.Add(s)
	}
	g := fuzzGate(f)
	f.Fuzz(func(t *testing.T, script string) {
		checkDecision(t, "CheckShell", func() Decision { return g.CheckShell(script) })
	})
}

func FuzzCheckArgv(f *testing.F) {
	for _, s := range []string{"git\x00push", "sh\x00-c\x00rm -rf /", "env\x00-S\x00git push", "xargs\x00-I{}\x00{}", "find\x00/\x00-exec\x00{}\x00;"} {
		f.Add(s)
	}
	g := fuzzGate(f)
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x00")
		checkDecision(t, "CheckArgv", func() Decision { return g.CheckArgv(argv) })
		Normalise(argv)
	})
}
