package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// guardModel writes a decision model for [sandbox.guard] command: it
// blocks any request that carries the canary PLANTED (in a script's
// content, as the command itself never spells it) and allows the rest.
func guardModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.sh")
	body := `#!/bin/sh
if grep -q PLANTED; then
  echo '{"safe":0.01,"exfiltration":0.99,"destructive":0.99,"injection":0.99}'
else
  echo '{"safe":0.99,"exfiltration":0.01,"destructive":0.01,"injection":0.01}'
fi
`
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGuardJudgesWhatTheSessionRuns: in a session the checkout's writes
// live in the session's overlay and a writable path's copy is the
// session's, so the host's copy of a script there is not what the next
// command runs. The guard must not judge the host's benign copy and let
// the session run its planted one (issue 35, item 3). Controls: the model
// does block the canary when it sees it, and a one-shot run (a fresh
// sandbox, whose checkout is the host's) is judged on the host's copy and
// runs exactly that.
func TestGuardJudgesWhatTheSessionRuns(t *testing.T) {
	testenv.SkipShort(t, "runs sandboxes")
	for _, backend := range []string{"local", "docker", "oci"} {
		t.Run(backend, func(t *testing.T) {
			requireBackend(t, backend)
			body := fmt.Sprintf("[project]\ncheckout = \"co\"\n[sandbox]\nnetwork = false\nwritable = [\"repros\", \".triage\"]\n"+
				"[sandbox.guard]\nenabled = true\nmodel = \"canary\"\ncommand = [%q]\n", guardModel(t))
			root := workspace(t, "")
			for name, content := range map[string]string{
				"co/run.sh": "echo benign\n", "repros/run.sh": "echo benign\n", "triage.toml": body,
			} {
				full := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Control: the model blocks the canary when it is shown it.
			if err := os.WriteFile(filepath.Join(root, "repros", "bad.sh"), []byte("echo PLANTED\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, root, nil, "run", "--backend", backend, "--", "sh", "repros/bad.sh")
			if r.code != 125 || !strings.Contains(r.stderr, "DENIED") {
				t.Fatalf("control: the model did not block the canary it was shown: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
			}
			// Control: a one-shot run is judged on the host's copy, which is
			// what its fresh sandbox runs.
			r = runCLI(t, root, nil, "run", "--backend", backend, "--", "sh", "co/run.sh")
			if r.code != 0 || strings.TrimSpace(r.stdout) != "benign" {
				t.Fatalf("control: a one-shot run of the host's script: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
			}
			session := "guard-" + fmt.Sprint(time.Now().UnixNano()%1e9)
			t.Cleanup(func() { runCLI(t, root, nil, "session", "end", session) })
			run := func(argv ...string) cliResult {
				t.Helper()
				return runCLI(t, root, nil, append([]string{"run", "--backend", backend, "--session", session, "--"}, argv...)...)
			}
			// Writing a file there by name only is judged on the command's
			// text (the host's copy is not shown: it is not what is left).
			if r := run("sh", "-c", `printf 'echo benign\n' > co/run.sh`); r.code != 0 {
				t.Fatalf("writing co/run.sh by name: exit %d: %s", r.code, r.stderr)
			}
			// The command that plants builds the path at run time, where no
			// reading of the command line sees it, and never spells the canary.
			plant := func(dir, name string) {
				t.Helper()
				prog := fmt.Sprintf(`BEGIN { printf "echo PLAN" "TED\n" > (%q "%s/%s") }`, dir[:1], dir[1:], name)
				if r := run("awk", prog); r.code != 0 {
					t.Fatalf("planting %s/%s: exit %d: %s", dir, name, r.code, r.stderr)
				}
			}
			plant("co", "run.sh")
			if b, _ := os.ReadFile(filepath.Join(root, "co", "run.sh")); string(b) != "echo benign\n" {
				t.Fatalf("the host's checkout changed: %q", b)
			}
			for _, script := range []string{"co/run.sh", "co/new.sh"} {
				if script == "co/new.sh" {
					plant("co", "new.sh")
				}
				r := run("sh", script)
				if strings.Contains(r.stdout, "PLANTED") {
					t.Fatalf("%s: the guard judged the host's copy and the session ran its own: exit %d, stdout %q, stderr %s", script, r.code, r.stdout, r.stderr)
				}
				if r.code != 125 || !strings.Contains(r.stderr, "cannot judge "+script) {
					t.Errorf("%s: want a refusal naming it: exit %d, stderr %s", script, r.code, r.stderr)
				}
			}
			// A writable path's copy in a session is the session's too: the
			// host's later change does not reach it.
			plant("repros", "run.sh")
			if err := os.WriteFile(filepath.Join(root, "repros", "run.sh"), []byte("echo benign\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r = run("sh", "repros/run.sh")
			if strings.Contains(r.stdout, "PLANTED") || r.code != 125 || !strings.Contains(r.stderr, "cannot judge repros/run.sh") {
				t.Errorf("repros/run.sh: want a refusal naming it: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
			}
			// Reaching it through a cd, quotes or a pattern is refused too.
			for _, code := range []string{"cd co && sh run.sh", `sh c""o/run.sh`, "sh c?/run.sh", "cd co && sh new.sh"} {
				r := run("sh", "-c", code)
				if strings.Contains(r.stdout, "PLANTED") || r.code != 125 || !strings.Contains(r.stderr, "cannot judge") {
					t.Errorf("%s: want a refusal: exit %d, stdout %q, stderr %s", code, r.code, r.stdout, r.stderr)
				}
			}
			// What only names a path there that the host has nothing at is
			// judged: git log in the checkout.
			if r := run("sh", "-c", "cd co && ls log 2>/dev/null; true"); r.code != 0 {
				t.Errorf("cd co && ls log: exit %d, stderr %s", r.code, r.stderr)
			}
			// Naming a directory of the checkout is no script: still judged.
			if r := run("ls", "co"); r.code != 0 {
				t.Errorf("ls co in the session: exit %d, stderr %s", r.code, r.stderr)
			}
		})
	}
}
