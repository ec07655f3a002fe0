//go:build unix

package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// quarantined lists the quarantine entries of name in dir.
func quarantined(t *testing.T, dir, name string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, name+QuarantineSuffix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// leaveGit is what an ordinary agent run leaves: a repository whose config
// runs a command when git next looks at the directory.
func leaveGit(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "[core]\n\tfsmonitor = touch /tmp/pwned\n"
	if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func assertGone(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s is still live where tools look for it", filepath.Join(dir, n))
		}
	}
}

// Two ordinary runs that each leave issues/.git: the second must not find
// its way out blocked by the first's quarantine.
func TestQuarantineTwoRuns(t *testing.T) {
	root := t.TempDir()
	issues := filepath.Join(root, "issues")
	for run := 1; run <= 2; run++ {
		leaveGit(t, issues)
		if _, err := InspectOutputs(root, []string{"issues"}, testToolNames, nil); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		assertGone(t, issues, ".git")
		if got := quarantined(t, issues, ".git"); len(got) != run {
			t.Fatalf("run %d: quarantine entries %q, want %d", run, got, run)
		}
	}
}

// Entries already sitting at quarantine-like names (a symlink to a
// directory outside, a non-empty directory, a file) neither block the move
// nor redirect it, and are left as they are.
func TestQuarantinePlantedEntries(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	issues := filepath.Join(root, "issues")
	if err := os.MkdirAll(filepath.Join(issues, ".vscode"+QuarantineSuffix, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	plant(t, filepath.Join(issues, ".envrc"+QuarantineSuffix), "symlink", outside)
	plant(t, filepath.Join(issues, ".git"+QuarantineSuffix), "file", "")
	leaveGit(t, issues)
	plant(t, filepath.Join(issues, ".envrc"), "file", "")
	plant(t, filepath.Join(issues, ".vscode", "tasks.json"), "file", "")

	ins, err := InspectOutputs(root, []string{"issues"}, testToolNames, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertGone(t, issues, ".git", ".envrc", ".vscode")
	if names, _ := os.ReadDir(outside); len(names) != 0 {
		t.Errorf("the move went through the planted symlink: %v", names)
	}
	if fi, err := os.Lstat(filepath.Join(issues, ".envrc"+QuarantineSuffix)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the planted symlink was replaced: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(issues, ".vscode"+QuarantineSuffix, "keep")); err != nil {
		t.Errorf("the planted directory was changed: %v", err)
	}
	for _, n := range testToolNames {
		if got := quarantined(t, issues, n); len(got) != 2 {
			t.Errorf("%s: quarantine entries %q, want the planted one and a new one", n, got)
		}
	}
	renamed := 0
	for _, l := range ins.Leftovers {
		if l.Kind == "tool-config" && strings.HasPrefix(l.Action, "renamed to ") {
			renamed++
		}
	}
	if renamed != 3 {
		t.Errorf("leftovers %+v, want 3 renamed", ins.Leftovers)
	}
}

// When a tool config cannot be moved aside, it is removed and the run says
// so; when it cannot be removed either, the error says it is still live.
// Either way the walk goes on: what follows is still inspected.
func TestQuarantineFailsClosed(t *testing.T) {
	refuse := func(int, string, int, string) error { return unix.EXDEV }
	t.Run("removed", func(t *testing.T) {
		root := t.TempDir()
		t.Cleanup(func() { writableAgain(root) })
		issues := filepath.Join(root, "issues")
		leaveGit(t, filepath.Join(issues, "a"))
		// Left read-only inside, as a run can.
		deep := filepath.Join(issues, "a", ".git", "hooks", "deep")
		plant(t, filepath.Join(deep, "f"), "file", "")
		for _, d := range []string{deep, filepath.Dir(deep)} {
			if err := os.Chmod(d, 0o555); err != nil {
				t.Fatal(err)
			}
		}
		plant(t, filepath.Join(issues, "b", ".envrc"), "file", "")
		suid := filepath.Join(issues, "c", "suid")
		plant(t, suid, "file", "")
		_ = os.Chmod(suid, 0o755|os.ModeSetuid)
		w := walker{rename: refuse, remove: removeAll}
		ins, err := w.inspect(root, []string{"issues"}, testToolNames, nil)
		if err == nil || !strings.Contains(err.Error(), "removed") {
			t.Errorf("the run does not say it removed them: %v", err)
		}
		assertGone(t, filepath.Join(issues, "a"), ".git")
		assertGone(t, filepath.Join(issues, "b"), ".envrc")
		if fi, _ := os.Stat(suid); fi.Mode()&os.ModeSetuid != 0 {
			t.Error("the walk stopped at the failed move: a later set-uid file kept its bit")
		}
		removed := 0
		for _, l := range ins.Leftovers {
			if l.Kind == "tool-config" && strings.HasPrefix(l.Action, "removed") {
				removed++
			}
		}
		if removed != 2 {
			t.Errorf("leftovers %+v, want 2 removed", ins.Leftovers)
		}
	})
	t.Run("neither moved nor removed", func(t *testing.T) {
		root := t.TempDir()
		issues := filepath.Join(root, "issues")
		leaveGit(t, issues)
		w := walker{rename: refuse, remove: func(int, string) error { return unix.EBUSY }}
		ins, err := w.inspect(root, []string{"issues"}, testToolNames, nil)
		if err == nil || !strings.Contains(err.Error(), "still live") {
			t.Errorf("the run does not say the tool config is still live: %v", err)
		}
		if len(ins.Leftovers) != 1 || !strings.HasPrefix(ins.Leftovers[0].Action, "LEFT IN PLACE") {
			t.Errorf("leftovers %+v", ins.Leftovers)
		}
		if !errors.Is(err, unix.EBUSY) {
			t.Errorf("the cause is lost: %v", err)
		}
	})
}

// A run that leaves the directory holding a tool config read-only (it is
// the caller's own) does not keep the tool config in place.
func TestQuarantineReadOnlyParent(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "issues", "sub")
	leaveGit(t, sub)
	plant(t, filepath.Join(sub, ".git", "locked", "f"), "file", "")
	for _, d := range []string{filepath.Join(sub, ".git", "locked"), sub} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { writableAgain(root) })
	if _, err := InspectOutputs(root, []string{"issues"}, testToolNames, nil); err != nil {
		t.Fatal(err)
	}
	assertGone(t, sub, ".git")
	// Removal too, when the move is refused.
	leaveGit(t, filepath.Join(root, "issues", "sub2"))
	sub2 := filepath.Join(root, "issues", "sub2")
	if err := os.Chmod(filepath.Join(sub2, ".git"), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sub2, 0o555); err != nil {
		t.Fatal(err)
	}
	w := walker{rename: func(int, string, int, string) error { return unix.EXDEV }, remove: removeAll}
	if _, err := w.inspect(root, []string{"issues"}, testToolNames, nil); err == nil || !strings.Contains(err.Error(), "removed it") {
		t.Errorf("want the removal reported: %v", err)
	}
	assertGone(t, sub2, ".git")
}

// writableAgain lets t.TempDir's cleanup remove what a test left read-only.
func writableAgain(root string) {
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}
