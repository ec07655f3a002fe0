package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/insidebin"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// TestInsideBinaryChoice runs the CLI with each kind of inside binary and
// looks at what ran inside the local sandbox: the binary at the holder's
// path answers `version` only when it is the CLI's own (the small one
// refuses anything but its entry points). A small binary that cannot be
// proven the CLI's source (these test builds carry no VCS stamp) falls back
// to the CLI's binary and says so; an explicit one that cannot be used at
// all is refused.
func TestInsideBinaryChoice(t *testing.T) {
	testenv.RequireRoot(t, "the local backend's sandbox with cgroups")
	root := workspace(t, "[sandbox]\nbackend = \"local\"\n")
	inside := testenv.InsideBinary(t)
	env := func(path string) []string { return []string{insidebin.EnvVar + "=" + path} }
	probe := []string{"run", "--", "/.triage-sandbox/triage-sandbox", "version"}

	t.Run("unprovable falls back to the CLI's binary", func(t *testing.T) {
		trace := filepath.Join(t.TempDir(), "trace")
		r := runCLI(t, root, append(env(inside), "TRIAGE_SANDBOX_TRACE="+trace), probe...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "triage-sandbox ") {
			t.Fatalf("the holder's binary is not the CLI's: %+v", r)
		}
		if !strings.Contains(r.stderr, "warning: "+insidebin.EnvVar+": ") || !strings.Contains(r.stderr, "no VCS revision") {
			t.Fatalf("the explicit setting was replaced without a warning: %+v", r)
		}
		b, err := os.ReadFile(trace)
		if err != nil || !strings.Contains(string(b), `"inside.fallback"`) || strings.Contains(string(b), `"inside.separate"`) {
			t.Fatalf("trace (%v) does not say the fallback:\n%s", err, b)
		}
		d := runCLI(t, root, env(inside), "doctor")
		if !strings.Contains(d.stdout+d.stderr, "the CLI's own") || !strings.Contains(d.stdout+d.stderr, "no VCS revision") {
			t.Fatalf("doctor does not say the fallback and why: %+v", d)
		}
	})
	t.Run("the small binary itself refuses what is not its own", func(t *testing.T) {
		// The control of the check above: had the small binary been the
		// holder's, `version` would have been refused.
		out, err := exec.Command(inside, "version").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(string(out), "runs only inside a sandbox") {
			t.Fatalf("triage-sandbox-inside version: %v, %q", err, out)
		}
	})
	for _, tc := range []struct {
		name, path, why string
	}{
		{"missing", filepath.Join(t.TempDir(), "no-such-inside"), "no triage-sandbox-inside"},
		{"dynamic", dynamicBinary(t), "dynamically linked"},
		{"writable by others", writableCopy(t, inside), "writable by group or others"},
	} {
		t.Run("explicit "+tc.name+" is refused", func(t *testing.T) {
			r := runCLI(t, root, env(tc.path), probe...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 125 || r.stdout != "" || len(lines) != 1 || !strings.Contains(r.stderr, insidebin.EnvVar+"="+tc.path) || !strings.Contains(r.stderr, tc.why) {
				t.Fatalf("want exit 125 and one line naming %s and %q: %+v", insidebin.EnvVar, tc.why, r)
			}
		})
	}
}

// dynamicBinary is a dynamically linked binary of the host's.
func dynamicBinary(t *testing.T) string {
	t.Helper()
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if static, err := insidebin.Static(sh); err != nil || static {
		t.Fatalf("%s: static %v, %v: the test needs a dynamically linked binary", sh, static, err)
	}
	return sh
}

// writableCopy is a copy of bin that its group may write.
func writableCopy(t *testing.T, bin string) string {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), insidebin.Name)
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o775); err != nil {
		t.Fatal(err)
	}
	return p
}
