package oci

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file renamed into the directory (how runc writes its pid file) wakes
// the wait; nothing wakes it before.
func TestDirChangesWakesOnRename(t *testing.T) {
	dir := t.TempDir()
	changed, stop := dirChanges(dir)
	defer stop()
	if changed == nil {
		t.Fatal("no inotify watch of a temporary directory")
	}
	select {
	case <-changed:
		t.Fatal("woken before any change")
	case <-time.After(50 * time.Millisecond):
	}
	tmp := filepath.Join(t.TempDir(), "pid.tmp")
	if err := os.WriteFile(tmp, []byte("42"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "pid")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken by the pid file's rename")
	}
}
