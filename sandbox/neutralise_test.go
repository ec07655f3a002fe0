package sandbox

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// hostileName carries what a name chosen in the sandbox can: a title
// change, a screen clear, and a newline starting a workflow command.
const hostileName = "x\x1b]0;pwned\x07\x1b[2J\n::error title=forged::run me"

// unsafeIn names what in s, one line, would act on a terminal or a CI
// log: an escape, a line break, or a workflow command at its start ("::"
// elsewhere is kept: the runner acts only at a line's start).
func unsafeIn(s string) string {
	for _, bad := range []string{"\x1b", "\x07", "\n", "\r", "\u009b", "##["} {
		if strings.Contains(s, bad) {
			return bad
		}
	}
	if strings.HasPrefix(strings.TrimLeft(s, " \t"), "::") {
		return "::"
	}
	return ""
}

// Everything triage-sandbox reports about a run that holds names the
// sandbox chose (files it discarded or left, symlink targets, copy-back
// problems, hints, the backend's warnings) is neutralised like the
// command's own output: one line, no escapes, no workflow command.
func TestReportNeutralised(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "issues")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Build(config.Default(root), profiles.RoleAgent, testHost(t, root), policy.Options{Backend: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	sb := &backendtest.Sandbox{Name: "fake-0123456789ab"}
	b := backendtest.NewShared(sb)
	sb.Warns = []string{"removing " + hostileName + ": busy"}
	result := backends.Result{ExitCode: 1, Sandbox: sb.Name,
		CopyBack: &stage.Report{
			Discarded: []string{"/" + hostileName},
			Changes:   []stage.Change{{Path: "/ws/" + hostileName, Action: "conflict", Detail: hostileName}},
		},
		CopyBackError: "copying back /ws/" + hostileName + ": refused",
	}
	sb.ExecFunc = func(_ context.Context, _ backends.Command, out backends.Streams) (backends.Result, error) {
		if err := os.Symlink("/etc/"+hostileName, filepath.Join(dir, "link-"+hostileName)); err != nil {
			t.Error(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, hostileName, ".git"), 0o755); err != nil {
			t.Error(err)
		}
		_, _ = io.WriteString(out.Stderr, "cannot create '"+filepath.Join(root, hostileName)+"': Read-only file system\n")
		return result, nil
	}
	req := request(p, "sh", "-c", "true")
	req.Redactor, req.Raw = newRedactor(), true
	out, err := Run(context.Background(), b, req)
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	shown = append(shown, out.Warnings...)
	shown = append(shown, out.Hints...)
	shown = append(shown, out.Outputs.Incomplete)
	for _, l := range out.Outputs.Leftovers {
		shown = append(shown, l.Path, l.Kind, l.Detail, l.Action)
	}
	found := 0
	for _, s := range shown {
		if bad := unsafeIn(s); bad != "" {
			t.Errorf("%q reaches the caller in %q", bad, s)
		}
		if strings.Contains(s, "pwned") {
			found++
		}
	}
	// The names are shown, neutralised, not dropped: the discarded file,
	// the copy-back conflict and error, the symlink and its target, the
	// quarantined .git, the hint, the backend's warning.
	if found < 8 {
		t.Errorf("only %d reports name the planted files: %q", found, shown)
	}
}
