package sandboxinit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestSetModes: the holder gives the scratch directories the policy's
// modes (a runtime may have left the mount point's), touches a directory
// already right not at all, and reports one it cannot change.
func TestSetModes(t *testing.T) {
	dir := t.TempDir()
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	setModes([]protocol.DirMode{{Path: home, Mode: 0o700}, {Path: tmp, Mode: 0o1777}, {Path: filepath.Join(dir, "gone"), Mode: 0o700}}, &stderr)
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{{home, 0o700}, {tmp, 0o777 | os.ModeSticky}} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModePerm | os.ModeSticky); got != tc.want {
			t.Errorf("%s: mode %v, want %v", tc.path, got, tc.want)
		}
	}
	if !bytes.Contains(stderr.Bytes(), []byte("gone")) || bytes.Count(stderr.Bytes(), []byte("\n")) != 1 {
		t.Errorf("stderr %q, want one line about the missing directory", stderr.String())
	}
}
