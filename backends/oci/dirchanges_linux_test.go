package oci

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDirChanges: the pid file's wait wakes when a file is renamed into
// the bundle directory (runc's pid file) and when one is written there
// (a runtime that writes it in place), and not before.
func TestDirChanges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(dir string) error
	}{
		{"renamed", func(dir string) error {
			tmp := filepath.Join(t.TempDir(), "pid.tmp")
			if err := os.WriteFile(tmp, []byte("1\n"), 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, filepath.Join(dir, "pid"))
		}},
		{"written", func(dir string) error { return os.WriteFile(filepath.Join(dir, "pid"), []byte("1\n"), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			changed, stop, err := dirChanges(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			select {
			case <-changed:
				t.Fatal("woken before anything changed")
			case <-time.After(20 * time.Millisecond):
			}
			if err := tc.write(dir); err != nil {
				t.Fatal(err)
			}
			select {
			case <-changed:
			case <-time.After(5 * time.Second):
				t.Fatal("not woken by the pid file")
			}
		})
	}
}
