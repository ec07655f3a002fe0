package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadDirAgreesWithTheOS: the scan's own directory reader sees what
// os.ReadDir sees (names, directories, sockets; a symlink to a directory
// is neither), across more entries than one read of its buffer holds, and
// stops at its bound saying there are more.
func TestReadDirAgreesWithTheOS(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("n", 120)
	for i := range 600 { // about 80 KiB of records: several reads
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%03d", long, i)), nil, 0o600))
	}
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Symlink("sub", filepath.Join(dir, "link")))
	listen(t, filepath.Join(dir, "s.sock"))

	buf := make([]byte, direntBufSize)
	got, more := readDir(nil, dir, 1_000_000, buf)
	want, err := os.ReadDir(dir)
	must(t, err)
	if more || len(got) != len(want) {
		t.Fatalf("read %d entries (more %v), the OS %d", len(got), more, len(want))
	}
	slices.SortFunc(got, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	for i, w := range want {
		g := got[i]
		if g.name != w.Name() || g.dir != w.IsDir() || g.sock != (w.Type()&fs.ModeSocket != 0) {
			t.Errorf("entry %+v, the OS says %s dir %v type %v", g, w.Name(), w.IsDir(), w.Type())
		}
	}
	if part, more := readDir(nil, dir, 10, buf); len(part) != 10 || !more {
		t.Errorf("bounded read: %d entries, more %v; want 10 and more", len(part), more)
	}
	if none, more := readDir(nil, filepath.Join(dir, "missing"), 10, buf); len(none) != 0 || more {
		t.Errorf("a missing directory read %d entries, more %v", len(none), more)
	}
}
