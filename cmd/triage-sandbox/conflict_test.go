package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/runreport"
)

// TestHostEditDuringCommandKeepsBoth: the host edits NOTES.md while an
// agent command that also edited it runs. Neither version is lost: the
// host's stays, the agent's is kept beside it, and --json says so in
// `conflicts` and `warnings`, not among the special files.
func TestHostEditDuringCommandKeepsBoth(t *testing.T) {
	testenv.SkipShort(t, "runs sandboxes")
	testenv.RequireRoot(t, "kills the command's process from the host to order the two edits")
	for _, backend := range []string{"docker", "oci", "local"} {
		t.Run(backend, func(t *testing.T) {
			switch backend {
			case "docker":
				testenv.RequireDocker(t)
			case "oci":
				if _, err := exec.LookPath("runc"); err != nil {
					t.Skip("runc is not installed")
				}
			}
			root := workspace(t, "[sandbox]\nnetwork = false\n")
			notes := filepath.Join(root, "NOTES.md")
			if err := os.WriteFile(notes, []byte("v1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// The marker is built by the shell, so only sleep's argv (after
			// the agent's edit) carries it.
			n := fmt.Sprint(time.Now().UnixNano() % 1e9)
			cmd := exec.Command(testenv.Binary(t), "run", "--json", "--backend", backend, "--", "sh", "-c",
				`echo agent > NOTES.md; sleep 300 "0.$1"; exit 0`, "sh", n)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateDir(t))
			var stdout strings.Builder
			cmd.Stdout = &stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var sleeping []int
			if !testenv.Eventually(90*time.Second, func() bool {
				sleeping = processesWith("0."+n, cmd.Process.Pid)
				return len(sleeping) > 0
			}) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatal("the command never reached its sleep")
			}
			if err := os.WriteFile(notes, []byte("host edit\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, pid := range sleeping {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			_ = cmd.Wait()
			var out runreport.Report
			if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
				t.Fatalf("--json: %v: %q", err, stdout.String())
			}
			if got, _ := os.ReadFile(notes); string(got) != "host edit\n" {
				t.Errorf("NOTES.md = %q, want the host's edit", got)
			}
			if len(out.Conflicts) != 1 || out.Conflicts[0].KeptAs == "" {
				t.Fatalf("--json conflicts %+v (warnings %q, special files %+v)", out.Conflicts, out.Warnings, out.SpecialFiles)
			}
			if got, err := os.ReadFile(out.Conflicts[0].KeptAs); err != nil || string(got) != "agent\n" {
				t.Errorf("the agent's version at %s = %q, %v", out.Conflicts[0].KeptAs, got, err)
			}
			if len(out.SpecialFiles) != 0 || !strings.Contains(strings.Join(out.Warnings, "\n"), "conflict") {
				t.Errorf("a conflict belongs in warnings, not special files: warnings %q, special files %+v", out.Warnings, out.SpecialFiles)
			}
		})
	}
}

// TestSymlinkInWritablePathOnDocker: a symlink the host already has in a
// writable path is no conflict when a run leaves it alone, and a run's
// change to it reaches the host (issue 35: pack recorded size 0, the
// copy-back compared the target's length, so every link conflicted).
func TestSymlinkInWritablePathOnDocker(t *testing.T) {
	testenv.SkipShort(t, "runs sandboxes")
	testenv.RequireDocker(t)
	root := workspace(t, "[sandbox]\nnetwork = false\n")
	repros := filepath.Join(root, "repros")
	if err := os.MkdirAll(repros, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(repros, "current")
	if err := os.Symlink("a.txt", link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, command, want string
	}{
		{"untouched", "true", "a.txt"},
		{"retargeted", "ln -sfn b.txt repros/current", "b.txt"},
		{"untouched again", "true", "b.txt"},
	} {
		rep, _ := runReport(t, root, "--backend", "docker", "--", "sh", "-c", c.command)
		if rep.ExitCode != 0 || rep.CopyBackError != "" || len(rep.Conflicts) != 0 {
			t.Errorf("%s: exit %d, copy-back error %q, conflicts %+v, warnings %q", c.name, rep.ExitCode, rep.CopyBackError, rep.Conflicts, rep.Warnings)
		}
		if got, err := os.Readlink(link); err != nil || got != c.want {
			t.Errorf("%s: the link points at %q (%v), want %q", c.name, got, err, c.want)
		}
	}
}
