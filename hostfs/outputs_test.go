//go:build unix

package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestInspectOutputs: what a run leaves in its outputs is neutralised or
// listed, and nothing outside is touched.
func TestInspectOutputs(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(outside, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	repros := filepath.Join(root, "repros")
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(repros, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	suid := mk("bin/escalate", 0o4755|os.ModeSetuid)
	_ = os.Chmod(suid, 0o755|os.ModeSetuid)
	sgid := mk("bin/group", 0o755)
	_ = os.Chmod(sgid, 0o755|os.ModeSetgid)
	mk("ok.txt", 0o644)
	if err := os.Symlink(outside, filepath.Join(repros, "output.txt")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(repros, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk("sub/.git/hooks/post-checkout", 0o755)
	mk(".envrc", 0o644)
	if err := os.MkdirAll(filepath.Join(repros, "deep", ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(root, "NOTES.md")
	if err := os.WriteFile(notes, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	ins, err := InspectOutputs(root, []string{"repros", "NOTES.md", "missing"}, testToolNames, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Leftover{}
	for _, l := range ins.Leftovers {
		got[strings.TrimPrefix(l.Path, root+"/")] = l
	}
	want := map[string]string{
		"repros/bin/escalate": "setuid",
		"repros/bin/group":    "setgid",
		"repros/output.txt":   "symlink",
		"repros/pipe":         "fifo",
		"repros/sub/.git":     "tool-config",
		"repros/.envrc":       "tool-config",
		"repros/deep/.vscode": "tool-config",
	}
	for path, kind := range want {
		if got[path].Kind != kind {
			t.Errorf("%s: got %+v, want kind %s", path, got[path], kind)
		}
	}
	if len(got) != len(want) {
		t.Errorf("leftovers %+v", ins.Leftovers)
	}
	for _, p := range []string{suid, sgid} {
		if fi, _ := os.Stat(p); fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s keeps its set-id bit: %v", p, fi.Mode())
		}
	}
	for _, name := range []string{"sub/.git", ".envrc", "deep/.vscode"} {
		if _, err := os.Lstat(filepath.Join(repros, name)); err == nil {
			t.Errorf("%s is still where tools look for it", name)
		}
		dir, base := filepath.Split(filepath.Join(repros, name))
		if got := quarantined(t, dir, base); len(got) != 1 {
			t.Errorf("%s was not kept under one quarantine name: %q", name, got)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "key" {
		t.Error("the symlink's target changed")
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o600 {
		t.Errorf("the symlink's target mode changed: %v", fi.Mode())
	}

	// Allowed where the config says so.
	mk("sub2/.git/config", 0o644)
	ins, err = InspectOutputs(root, []string{"repros"}, testToolNames, []string{"repros"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ins.Leftovers {
		if l.Kind == "tool-config" {
			t.Errorf("allowed tool config moved: %+v", l)
		}
	}
}

var testToolNames = []string{".git", ".envrc", ".vscode"}
