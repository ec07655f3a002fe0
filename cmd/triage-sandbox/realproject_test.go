package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/runreport"
)

// projectOwner is the uid:gid a real checkout belongs to: a user's, not
// root's (the sandbox runs as the workspace owner when root starts it).
const projectOwner = 1000

// realProject copies testdata/realprojects/NAME into a fresh git checkout
// beside a workspace with the default config (only [project] checkout),
// both owned by projectOwner, and returns the workspace root and the
// checkout.
func realProject(t *testing.T, name string) (root, checkout string) {
	t.Helper()
	root = workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	checkout = filepath.Join(filepath.Dir(root), "widgets")
	if out, err := exec.Command("cp", "-a", filepath.Join("testdata", "realprojects", name)+"/.", checkout).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v: %s", name, err, out)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = checkout
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "fixture")
	for _, d := range []string{root, checkout} {
		if out, err := exec.Command("chown", "-R", "1000:1000", d).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v: %s", err, out)
		}
	}
	return root, checkout
}

// checkoutUnchanged fails when the host checkout differs from its commit
// in any way git sees, ignored files included.
func checkoutUnchanged(t *testing.T, checkout string) {
	t.Helper()
	cmd := exec.Command("git", "-c", "safe.directory=*", "status", "--porcelain", "--ignored")
	cmd.Dir = checkout
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("the host checkout changed: %v\n%s", err, out)
	}
}

func runReport(t *testing.T, root string, args ...string) (runreport.Report, time.Duration) {
	t.Helper()
	rep, took, _ := runReportEnv(t, root, nil, args...)
	return rep, took
}

func realProjectBackends(t *testing.T) []string {
	testenv.SkipShort(t, "runs real projects' tests in sandboxes")
	testenv.RequireRoot(t, "makes the checkout a user's and its writes an overlay")
	testenv.RequireDocker(t)
	backends := []string{"docker"}
	if _, err := exec.LookPath("runc"); err == nil {
		backends = append(backends, "oci")
	}
	return backends
}

// TestNodeProjectTestsWithCoverage: `npm test` of a Node package whose
// runner writes coverage and a cache into the checkout passes with the
// default config, with the host's node; the host checkout is unchanged.
func TestNodeProjectTestsWithCoverage(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("the host has no npm: the default toolchain is the host's")
	}
	for _, backend := range realProjectBackends(t) {
		t.Run(backend, func(t *testing.T) {
			root, checkout := realProject(t, "nodecov")
			rep, _ := runReport(t, root, "--role", "reproducer", "--backend", backend, "--workdir", checkout, "--",
				"sh", "-c", "npm test && ls .nyc_output | wc -l")
			if rep.ExitCode != 0 {
				t.Fatalf("npm test: exit %d\nstdout %s\nstderr %s\nhints %q warnings %q", rep.ExitCode, rep.Stdout, rep.Stderr, rep.Hints, rep.Warnings)
			}
			if lines := strings.Fields(rep.Stdout); len(lines) == 0 || lines[len(lines)-1] == "0" {
				t.Errorf("no coverage was written: %s", rep.Stdout)
			}
			checkoutUnchanged(t, checkout)
		})
	}
}

// TestGoModuleTestsTwice: `go test ./...` of a Go module passes with the
// default config, with the host's go; in an agent session the second run
// takes at most half the first's time (the build cache is the session's);
// the host checkout is unchanged.
func TestGoModuleTestsTwice(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the host has no go")
	}
	for _, backend := range realProjectBackends(t) {
		t.Run(backend, func(t *testing.T) {
			root, checkout := realProject(t, "gomod")
			session := "gomod-" + backend
			t.Cleanup(func() { runCLI(t, root, nil, "session", "end", session) })
			var took [2]time.Duration
			for i := range took {
				var rep runreport.Report
				rep, took[i] = runReport(t, root, "--backend", backend, "--session", session, "--workdir", checkout, "--", "go", "test", "./...")
				if rep.ExitCode != 0 {
					t.Fatalf("go test run %d: exit %d\nstdout %s\nstderr %s\nhints %q warnings %q", i+1, rep.ExitCode, rep.Stdout, rep.Stderr, rep.Hints, rep.Warnings)
				}
			}
			t.Logf("go test ./...: first %v, second %v (%.2fx)", took[0].Round(time.Millisecond), took[1].Round(time.Millisecond), took[1].Seconds()/took[0].Seconds())
			if took[1] > took[0]/2 {
				t.Errorf("the second go test took %v, more than half the first's %v", took[1], took[0])
			}
			checkoutUnchanged(t, checkout)
		})
	}
}

// TestHostPython: [project] python = "/usr/bin/python3" (the host's whole
// /usr as its prefix) runs.
func TestHostPython(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 on the host")
	}
	for _, backend := range realProjectBackends(t) {
		t.Run(backend, func(t *testing.T) {
			root := workspace(t, "[project]\npython = \"/usr/bin/python3\"\n")
			rep, _ := runReport(t, root, "--role", "reproducer", "--backend", backend, "--", "python3", "-c", "import sys; print(sys.executable)")
			if rep.ExitCode != 0 || !strings.Contains(rep.Stdout, "python3") {
				t.Fatalf("python3: exit %d: %s %s", rep.ExitCode, rep.Stdout, rep.Stderr)
			}
		})
	}
}
