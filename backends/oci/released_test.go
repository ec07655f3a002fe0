package oci

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Close releases the network namespace's mount while the runtime ends and
// removes the bundle (with its ownership record) last: a kill -9 of the
// owner between the two leaves a bundle without its netns, which the
// sweep still takes whole.
func TestSweepTakesABundleWhoseNetnsWasReleased(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the bundles' directory is root's")
	}
	b := &Backend{stateDir: filepath.Join(t.TempDir(), "oci")}
	dir, err := b.newBundleDir("triage-sandbox-released")
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	rec := owner{PID: dead.Process.Pid, Start: "1", ExpiresAt: time.Now().Add(time.Hour), Runtime: "/nonexistent/runc"}
	if err := writeJSON(filepath.Join(dir, "owner.json"), rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := b.Sweep(context.Background())
	if err != nil || !slices.Contains(removed, "triage-sandbox-released") {
		t.Fatalf("sweep: removed %v, err %v", removed, err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("the bundle without its netns survived the sweep: %v", err)
	}
}
