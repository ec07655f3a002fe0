// Package scripts holds the tests of the repository's scripts that users
// run: the GitHub Action's (action.yml and scripts/action.sh).
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// actionlint lints GitHub workflows, and the local actions they use.
// It is a tool of this module (go.mod: tool), fetched with the others.
const actionlint = "actionlint"

// lintProject is a repository holding the action at its root and the
// example workflow using it as a local action (`uses: ./`), the way
// actionlint checks an action's metadata; edit changes the workflow first.
func lintProject(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	action, err := os.ReadFile(filepath.Join("..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("..", "docs", "examples", "triage-gate.yml"))
	if err != nil {
		t.Fatal(err)
	}
	uses := regexp.MustCompile(`uses: triage-sandbox/triage-sandbox@\S+`)
	if !uses.Match(example) {
		t.Fatal("the example workflow does not use the action")
	}
	wf := uses.ReplaceAllString(string(example), "uses: ./")
	if edit != nil {
		wf = edit(wf)
	}
	for path, body := range map[string]string{
		"action.yml": string(action), ".github/workflows/triage-gate.yml": wf,
	} {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runActionlint(t *testing.T, dir string) (string, error) {
	t.Helper()
	// Built in this module (the test's directory), run in the project.
	path, err := exec.Command("go", "tool", "-n", actionlint).Output()
	if err != nil {
		t.Fatalf("building actionlint: %v", err)
	}
	cmd := exec.Command(strings.TrimSpace(string(path)), "-no-color", ".github/workflows/triage-gate.yml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestActionlint: action.yml and the example workflow pass actionlint, and
// a mistake in them fails it (the lint is not a no-op).
func TestActionlint(t *testing.T) {
	testenv.SkipShort(t, "builds actionlint")
	if out, err := runActionlint(t, lintProject(t, nil)); err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
	broken := lintProject(t, func(wf string) string {
		return strings.Replace(wf, "roles: all", "roles: all\n          rolez: all", 1)
	})
	out, err := runActionlint(t, broken)
	if err == nil || !strings.Contains(out, "rolez") {
		t.Fatalf("actionlint passed an input the action does not have: %v\n%s", err, out)
	}
}

// actionRun is one run of scripts/action.sh on a workspace.
type actionRun struct {
	code    int
	out     string
	outputs string
	junit   string
}

func runAction(t *testing.T, toml string) actionRun {
	t.Helper()
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if toml != "" {
		if err := os.WriteFile(filepath.Join(ws, "triage.toml"), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gh := t.TempDir()
	junit := filepath.Join(gh, "selftest.xml")
	script, err := filepath.Abs("action.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "TS_BINARY="+testenv.Binary(t), "TS_ROLES=reproducer", "TS_JUNIT="+junit,
		"GITHUB_OUTPUT="+filepath.Join(gh, "output"), "GITHUB_STEP_SUMMARY="+filepath.Join(gh, "summary"),
		"GITHUB_PATH="+filepath.Join(gh, "path"))
	out, err := cmd.CombinedOutput()
	r := actionRun{out: string(out)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	outputs, _ := os.ReadFile(filepath.Join(gh, "output"))
	xml, _ := os.ReadFile(junit)
	r.outputs, r.junit = string(outputs), string(xml)
	return r
}

// TestActionScript: the action's script passes the gate on this machine,
// and fails it when the policy is weakened (network on).
func TestActionScript(t *testing.T) {
	testenv.RequireDocker(t)
	pass := runAction(t, "")
	if pass.code != 0 || !strings.Contains(pass.outputs, "result=passed") || !strings.Contains(pass.junit, `failures="0"`) {
		t.Fatalf("the gate on the default policy: exit %d, outputs %q\n%s", pass.code, pass.outputs, pass.out)
	}
	weak := runAction(t, "[sandbox]\nnetwork = true\n")
	if weak.code != 1 || !strings.Contains(weak.outputs, "result=failed") || !strings.Contains(weak.out, "FAIL  NET-01") {
		t.Fatalf("the gate with the network on: exit %d, outputs %q\n%s", weak.code, weak.outputs, weak.out)
	}
	if strings.Contains(weak.junit, `failures="0"`) || !strings.Contains(weak.junit, "<failure") {
		t.Errorf("the JUnit report of the weakened run shows no failure:\n%s", weak.junit)
	}
}
