package hostprep_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/hostprep"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

func build(t *testing.T, cfg *config.File) *policy.Policy {
	t.Helper()
	p, err := policy.Build(cfg, "agent", policy.Host{Home: "/h", OS: "linux", UID: os.Getuid(), GID: os.Getgid()}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWritableCreatesWritablePaths(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, config.FileName)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := hostprep.Writable(build(t, cfg)); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"issues", "repros", ".triage"} {
		if fi, err := os.Stat(filepath.Join(root, rel)); err != nil || !fi.IsDir() {
			t.Errorf("%s not created as a directory: %v", rel, err)
		}
	}
	for _, rel := range []string{"NOTES.md", "INDEX.md"} {
		if fi, err := os.Stat(filepath.Join(root, rel)); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s not created as a file: %v", rel, err)
		}
	}
}

// TestWritableRefusesPlantedSymlink: a writable path that is a symlink
// (planted by a sandbox that could write its parent) is refused, not
// followed.
func TestWritableRefusesPlantedSymlink(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	path := filepath.Join(root, config.FileName)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p := build(t, cfg)
	if err := os.Symlink(elsewhere, filepath.Join(root, "repros")); err != nil {
		t.Fatal(err)
	}
	if err := hostprep.Writable(p); err == nil {
		t.Fatal("a symlink planted at a writable path was followed")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("written through the symlink: %v", entries)
	}
}

// TestWritableCreatesNothingWithoutConfig: the built-in defaults prepare
// only what exists.
func TestWritableCreatesNothingWithoutConfig(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "repros"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hostprep.Writable(build(t, config.Default(root))); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Errorf("the workspace holds %v; nothing may be created", entries)
	}
}
