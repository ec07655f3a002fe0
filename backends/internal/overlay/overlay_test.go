//go:build linux

package overlay

import (
	"golang.org/x/sys/unix"

	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func discardPolicy(lower string, size, inodes int64) *policy.Policy {
	return &policy.Policy{
		Mounts: []policy.Mount{{Path: lower, ReadOnly: true, Discard: true, Kind: "dir", Why: "project checkout"}},
		Limits: profiles.Limits{WritableSize: size, WritableInodes: inodes},
	}
}

// TestOverlayDiscardsWrites: writes through the merged directory succeed,
// are bounded, and never reach the host directory; Remove leaves nothing
// mounted, and so does the sweep of a set whose owner is gone.
func TestOverlayDiscardsWrites(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	lower := t.TempDir()
	if err := os.WriteFile(filepath.Join(lower, "a.txt"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	s, err := Make(filepath.Join(parent, "set"), discardPolicy(lower, 1<<20, 64))
	if err != nil {
		t.Fatal(err)
	}
	merged, rw := s.Source(lower)
	if !rw || merged == lower {
		t.Fatalf("Source(%s) = %s, %v", lower, merged, rw)
	}
	if err := os.WriteFile(filepath.Join(merged, "a.txt"), []byte("sandbox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(merged, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(lower, "a.txt")); string(got) != "host\n" {
		t.Errorf("the host's file changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(lower, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a new file reached the host: %v", err)
	}
	// Bounded: 2 MiB into a 1 MiB upper layer fails with ENOSPC.
	err = os.WriteFile(filepath.Join(merged, "big"), make([]byte, 2<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing past the bound: %v, want ENOSPC", err)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if mounted(t, parent) {
		t.Error("Remove left a mount")
	}
	if _, err := os.Stat(filepath.Join(parent, "set")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left the directory: %v", err)
	}

	// A set whose owner died: Sweep removes it.
	s, err = Make(filepath.Join(parent, "dead"), discardPolicy(lower, 1<<20, 64))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "dead", recordName), []byte(`{"pid":1,"start":"gone"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if removed, err := Sweep(parent); err != nil || len(removed) != 1 {
		t.Fatalf("Sweep = %v, %v", removed, err)
	}
	if mounted(t, parent) {
		t.Error("Sweep left a mount")
	}
}

// TestOverlayRefusesOptionCharacters: a path an overlay's options cannot
// carry is refused, nothing left mounted.
func TestOverlayRefusesOptionCharacters(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	lower := filepath.Join(t.TempDir(), "a,upperdir=x")
	if err := os.Mkdir(lower, 0o755); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	if _, err := Make(filepath.Join(parent, "set"), discardPolicy(lower, 1<<20, 64)); err == nil {
		t.Fatal("Make accepted a path with a comma")
	}
	if mounted(t, parent) {
		t.Error("a failed Make left a mount")
	}
	if s, warning := For(filepath.Join(parent, "set2"), discardPolicy(lower, 1<<20, 64)); s != nil || !strings.Contains(warning, "read-only") {
		t.Errorf("For = %v, %q: want no set and a warning", s, warning)
	}
}

func mounted(t *testing.T, under string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), " "+under+"/")
}

func TestTmpfsOptions(t *testing.T) {
	for _, tc := range []struct {
		opts  string
		flags uintptr
		data  string
		bad   bool
	}{
		{"rw,nosuid,nodev,exec,size=10,nr_inodes=5,mode=0755,uid=1,gid=2", unix.MS_NOSUID | unix.MS_NODEV, "size=10,nr_inodes=5,mode=0755,uid=1,gid=2", false},
		{"ro,noexec", unix.MS_RDONLY | unix.MS_NOEXEC, "", false},
		{"rw,bind", 0, "", true},
		{"rw,size=1,lowerdir=/", 0, "", true},
	} {
		flags, data, err := tmpfsOptions(tc.opts)
		if tc.bad != (err != nil) || (!tc.bad && (flags != tc.flags || data != tc.data)) {
			t.Errorf("tmpfsOptions(%q) = %#x, %q, %v", tc.opts, flags, data, err)
		}
	}
}

// TestOverlayMapsTheOwner: root runs the sandbox as uid 1000 and the host
// directory is root's: in the merged view its files are 1000's (the lower
// layer is an id-mapped view), that view is read-only, the host's files
// keep their owner, and Remove leaves nothing mounted.
func TestOverlayMapsTheOwner(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	lower := t.TempDir()
	if err := os.MkdirAll(filepath.Join(lower, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lower, "sub", "a.txt"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := discardPolicy(lower, 1<<20, 64)
	p.User = policy.Identity{UID: 1000, GID: 1000}
	parent := t.TempDir()
	s, err := Make(filepath.Join(parent, "set"), p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	merged, _ := s.Source(lower)
	for _, rel := range []string{".", "sub", "sub/a.txt"} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(merged, rel), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 1000 || st.Gid != 1000 {
			t.Errorf("%s in the merged view: owner %d:%d, want 1000:1000", rel, st.Uid, st.Gid)
		}
	}
	mapped := filepath.Join(parent, "set", "0.lower")
	if err := os.WriteFile(filepath.Join(mapped, "sub", "a.txt"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("writing through the id-mapped view: %v, want EROFS", err)
	}
	if err := os.WriteFile(filepath.Join(merged, "sub", "a.txt"), []byte("sandbox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(lower, "sub", "a.txt"), &st); err != nil || st.Uid != 0 {
		t.Errorf("the host's file: owner %d, %v", st.Uid, err)
	}
	if got, _ := os.ReadFile(filepath.Join(lower, "sub", "a.txt")); string(got) != "host\n" {
		t.Errorf("the host's file changed: %q", got)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if mounted(t, parent) {
		t.Error("Remove left a mount")
	}
}
