package main

import (
	"strings"
	"testing"
)

// TestCheck: `check` prints the verdict and the rule, exits 0 allowed, 1
// denied, 3 confirm, 125 usage error, and runs nothing; `run` refuses a
// denied command with exit 125 and the same line, before any sandbox.
func TestCheck(t *testing.T) {
	root := workspace(t, "[project]\ncheckout = \"../widgets\"\n[sandbox]\ngate_confirm = [\"git-remote\"]\ndeny = [\"make deploy*\"]\n")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check", "--", "rm -fr /"}, 1, "rule recursive-delete"},
		{[]string{"check", "--", "/bin/rm", "-rf", "/"}, 1, "rule recursive-delete"},
		{[]string{"check", "--", `echo "a; rm -rf /"`}, 0, "ALLOWED"},
		{[]string{"check", "--", "grep -r 'git push' ."}, 0, "ALLOWED"},
		{[]string{"check", "--", "git -C x push"}, 3, "rule git-remote"},
		{[]string{"check", "--", "make deploy prod"}, 1, "deny:make deploy*"},
		{[]string{"check", "--role", "reproducer", "--", "sudo ls"}, 1, "rule sudo"},
		{[]string{"check"}, 125, "empty command"},
		{[]string{"check", "git", "push"}, 125, "put the command after --"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := runCLI(t, root, nil, c.args...)
			if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
				t.Errorf("exit %d, want %d; output %q, want %q", r.code, c.code, r.stdout+r.stderr, c.want)
			}
		})
	}
	r := runCLI(t, root, nil, "run", "--", "sh", "-c", "X=1 sudo rm -rf /")
	if r.code != 125 || !strings.Contains(r.stderr, "DENIED:") || !strings.Contains(r.stderr, "Do not retry it in another form.") {
		t.Errorf("run of a denied command: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(auditLines(t), `"gate":"deny`) {
		t.Errorf("the refusal is not audited with its verdict: %s", auditLines(t))
	}
	// A confirm rule with no terminal to ask on denies.
	r = runCLI(t, root, nil, "run", "--", "git", "push")
	if r.code != 125 || !strings.Contains(r.stderr, "confirmation") {
		t.Errorf("run of a confirm rule without a terminal: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestCheckAllowAllHasNoScratch: under allow_all the command runs in the
// user's real home, so nothing is the sandbox's scratch: a recursive
// delete in the home is denied there, and allowed where a sandbox gives
// HOME a fresh directory.
func TestCheckAllowAllHasNoScratch(t *testing.T) {
	for _, c := range []struct {
		toml string
		code int
		want string
	}{
		{"[sandbox]\nallow_all = true\n", 1, "rule recursive-delete"},
		{"[project]\ncheckout = \"../widgets\"\n", 0, "ALLOWED"},
	} {
		root := workspace(t, c.toml)
		r := runCLI(t, root, nil, "check", "--", "rm -rf ~/Documents")
		if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("%q: check rm -rf ~/Documents: exit %d, want %d; output %q", c.toml, r.code, c.code, r.stdout+r.stderr)
		}
	}
}
