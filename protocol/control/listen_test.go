//go:build unix

package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A control socket's parent another user made is refused (issue 22, #3's
// class): its socket would live in a directory that user controls.
func TestListenRefusesAnotherUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting a directory of another user needs root")
	}
	parent := filepath.Join(t.TempDir(), "docker")
	if err := os.Mkdir(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(parent, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(parent, 1000, 1000)
	if err == nil {
		ln.Close()
		t.Fatal("a control socket was made in a directory of uid 65534")
	}
	if !strings.Contains(err.Error(), parent) {
		t.Fatalf("the refusal does not name %s: %v", parent, err)
	}
	ln, err = Listen(filepath.Join(t.TempDir(), "own", "docker"), 1000, 1000)
	if err != nil {
		t.Fatalf("the caller's own directory: %v", err)
	}
	ln.Close()
}
