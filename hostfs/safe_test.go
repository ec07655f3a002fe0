//go:build unix

package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// plant puts a hostile object where triage-sandbox will work next.
func plant(t *testing.T, path, kind, target string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	switch kind {
	case "symlink":
		err = os.Symlink(target, path)
	case "fifo":
		err = syscall.Mkfifo(path, 0o644)
	case "dir":
		err = os.Mkdir(path, 0o755)
	case "file":
		err = os.WriteFile(path, nil, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// within bounds a call that must never block (a FIFO with no reader).
func within(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("blocked: a planted FIFO must be refused, not waited on")
		return nil
	}
}

func TestOpenAppendRefusesPlantedFiles(t *testing.T) {
	for _, kind := range []string{"symlink", "fifo", "dir"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("host file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(dir, ".triage", "audit.jsonl")
			plant(t, log, kind, victim)
			err := within(t, func() error {
				fd, err := OpenAppend(log)
				if err == nil {
					unix.Close(fd)
				}
				return err
			})
			if err == nil || !strings.Contains(err.Error(), "remove it") {
				t.Fatalf("err = %v, want a refusal naming what is there", err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "host file\n" {
				t.Errorf("the symlink's target changed: %q", b)
			}
		})
	}
	t.Run("regular file appends", func(t *testing.T) {
		log := filepath.Join(t.TempDir(), "state", "audit.jsonl")
		for range 2 {
			fd, err := OpenAppend(log)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = unix.Write(fd, []byte("x\n"))
			unix.Close(fd)
		}
		if b, _ := os.ReadFile(log); string(b) != "x\nx\n" {
			t.Fatalf("got %q", b)
		}
	})
}

func TestOpenWritableRefusesPlantedPaths(t *testing.T) {
	tests := []struct {
		name, plantAt, kind, rel, want string
	}{
		{"symlinked parent", "out", "symlink", "out/sub", "symlink"},
		{"symlinked dir", "repros", "symlink", "repros", "symlink"},
		{"symlinked file", "NOTES.md", "symlink", "NOTES.md", "symlink"},
		{"fifo as file", "NOTES.md", "fifo", "NOTES.md", "FIFO"},
		{"dir as file", "NOTES.md", "dir", "NOTES.md", "directory"},
		{"file as dir", "repros", "file", "repros", "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			outside := t.TempDir()
			plant(t, filepath.Join(root, tt.plantAt), tt.kind, outside)
			kind := KindDir
			if strings.HasSuffix(tt.rel, ".md") {
				kind = KindFile
			}
			err := within(t, func() error {
				fd, err := OpenWritable(root, tt.rel, kind)
				if err == nil {
					unix.Close(fd)
				}
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("something was created outside: %v", entries)
			}
		})
	}
	t.Run("missing paths are created", func(t *testing.T) {
		root := t.TempDir()
		for _, c := range []struct{ rel, kind string }{{"a/b/c", KindDir}, {"NOTES.md", KindFile}, {"x/y.md", KindFile}} {
			fd, err := OpenWritable(root, c.rel, c.kind)
			if err != nil {
				t.Fatal(err)
			}
			unix.Close(fd)
			fi, err := os.Lstat(filepath.Join(root, c.rel))
			if err != nil || fi.IsDir() != (c.kind == KindDir) {
				t.Errorf("%s: %v %v", c.rel, fi, err)
			}
		}
	})
}
