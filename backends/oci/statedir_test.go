package oci

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state directory another user made is refused (issue 22, #3's class):
// bundles, ownership records and the runtime's state would live where
// that user can plant or redirect them.
func TestNewBundleDirRefusesAnotherUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting a directory of another user needs root")
	}
	for _, sub := range []string{"", "bundles", "runtime"} {
		t.Run("planted "+sub, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "oci")
			planted := filepath.Join(state, sub)
			if err := os.MkdirAll(planted, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(planted, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(planted, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			b := &Backend{stateDir: state}
			if _, err := b.newBundleDir("id1"); err == nil || !strings.Contains(err.Error(), planted) {
				t.Fatalf("a directory of uid 65534 was used: %v", err)
			}
		})
	}
	b := &Backend{stateDir: filepath.Join(t.TempDir(), "own", "oci")}
	dir, err := b.newBundleDir("id2")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v", dir, fi, err)
	}
	if _, err := b.newBundleDir("id2"); err == nil {
		t.Fatal("an existing bundle directory was reused")
	}
}
