package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The state directory another user made is refused (issue 22, #3's
// class): ownership records there could be planted or redirected.
func TestNewStateDirRefusesAnotherUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting a directory of another user needs root")
	}
	state := filepath.Join(t.TempDir(), "local")
	if err := os.Mkdir(state, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(state, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(t.TempDir(), "planted")
	if err := os.Mkdir(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(planted, filepath.Join(state, "id1")); err != nil {
		t.Fatal(err)
	}
	b := &Backend{stateDir: state}
	if _, err := b.newStateDir("id1"); err == nil || !strings.Contains(err.Error(), state) {
		t.Fatalf("a state directory of uid 65534 was used: %v", err)
	}
	// The caller's own: a fresh directory, 0700, made exclusively.
	b.stateDir = filepath.Join(t.TempDir(), "own", "local")
	dir, err := b.newStateDir("id2")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v", dir, fi, err)
	}
	if _, err := b.newStateDir("id2"); err == nil {
		t.Fatal("an existing sandbox directory was reused")
	}
}
