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

// TestSessionKeepsSandboxWhenFilesAppear: files that appear at the
// workspace root or in a writable path between a session's commands keep
// its sandbox (and HOME with its warm caches): the conflict file
// triage-sandbox writes beside NOTES.md itself used to end it with "the
// policy changed". An edited config still ends it.
func TestSessionKeepsSandboxWhenFilesAppear(t *testing.T) {
	testenv.SkipShort(t, "runs sandboxes")
	for _, backend := range []string{"local", "docker", "oci"} {
		t.Run(backend, func(t *testing.T) {
			requireBackend(t, backend)
			body := "[sandbox]\nnetwork = false\n"
			root := workspace(t, body)
			session := "files-" + strings.ReplaceAll(fmt.Sprint(time.Now().UnixNano()%1e9), "-", "")
			run := func(script string) cliResult {
				t.Helper()
				return runCLI(t, root, nil, "run", "--backend", backend, "--session", session, "--", "sh", "-c", script)
			}
			t.Cleanup(func() { runCLI(t, root, nil, "session", "end", session) })
			if r := run(`echo warm > "$HOME/cache" && echo agent1 > NOTES.md`); r.code != 0 {
				t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
			}
			// The host edits NOTES.md, the agent too: the agent's version is
			// kept beside it, in a file at the root.
			if err := os.WriteFile(filepath.Join(root, "NOTES.md"), []byte("host\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := run(`echo agent2 > NOTES.md`)
			kept, _ := filepath.Glob(filepath.Join(root, "NOTES.md.from-sandbox-*"))
			if r.code != 0 || len(kept) == 0 {
				t.Fatalf("the conflict: exit %d, kept %v: %s", r.code, kept, r.stderr)
			}
			for name, body := range map[string]string{
				"dropped-by-the-maintainer.txt": "x\n", "newdir/y.txt": "y\n",
				"issues/34.md": "issue\n", "repros/r.py": "print(1)\n",
			} {
				full := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r = run(`cat "$HOME/cache"`)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "warm" || strings.Contains(r.stderr, "policy changed") {
				t.Fatalf("the session's sandbox was not kept: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
			}
			// The kept sandbox still holds its version of NOTES.md: kept
			// beside once, not again by every later command.
			if again, _ := filepath.Glob(filepath.Join(root, "NOTES.md.from-sandbox-*")); len(again) != len(kept) || strings.Contains(r.stderr, "conflict") {
				t.Errorf("the conflict came back: kept %v, stderr %s", again, r.stderr)
			}
			// A real change still ends it.
			if err := os.WriteFile(filepath.Join(root, "triage.toml"), []byte(body+"memory = \"1500m\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r = run(`cat "$HOME/cache" 2>/dev/null || echo cold`)
			if strings.TrimSpace(r.stdout) != "cold" || !strings.Contains(r.stderr, "the policy changed") {
				t.Fatalf("a config edit kept the old sandbox: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
