package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/runreport"
)

// TestHintIsNoHostOracle: the CLI (root here, as in CI) works out hints on
// the host from paths the command printed. A path the sandbox's identity
// could not see on the host (under a 0700 root directory) gets what a
// missing path gets; the control, a path it could see, gets the "exists on
// the host" hint, so the check can fail.
func TestHintIsNoHostOracle(t *testing.T) {
	testenv.RequireRoot(t, "makes root-only host directories the sandbox's identity may not search")
	testenv.RequireDocker(t)
	base, err := os.MkdirTemp("/var/tmp", "hint-oracle-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	private, open := filepath.Join(base, "private"), filepath.Join(base, "open")
	for dir, mode := range map[string]os.FileMode{private: 0o700, open: 0o755} {
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"docker", "local"} {
		t.Run(backend, func(t *testing.T) {
			root := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
			for _, tt := range []struct {
				path string
				seen bool
			}{{filepath.Join(open, "file"), true}, {filepath.Join(private, "file"), false}, {filepath.Join(base, "missing"), false}} {
				r := runCLI(t, root, nil, "run", "--json", "--backend", backend, "--", "sh", "-c", "cat "+tt.path+"; exit 1")
				var rep runreport.Report
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
					t.Fatalf("exit %d, --json: %v\nstdout %q\nstderr %s", r.code, err, r.stdout, r.stderr)
				}
				if !strings.Contains(rep.Stderr, "No such file") {
					t.Fatalf("%s was not missing in the sandbox: %+v", tt.path, rep)
				}
				said := strings.Contains(strings.Join(rep.Hints, "\n"), tt.path+" exists on the host")
				if said != tt.seen {
					t.Errorf("%s: hints %q, want the path said to exist: %v", tt.path, rep.Hints, tt.seen)
				}
			}
		})
	}
}
