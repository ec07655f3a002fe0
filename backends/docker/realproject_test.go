package docker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// pytestModules are what Debian's python3-pytest imports (pure Python);
// the test copies them into a venv, as pip would have installed them.
var pytestModules = []string{"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "attr", "attrs", "py.py"}

const debianPackages = "/usr/lib/python3/dist-packages"

// pytestBase is the pyenv CPython a test's venv is made from (its base
// interpreter lies outside the venv, as on many users' machines); the test
// is skipped where there is none, or no Debian pytest to copy in.
func pytestBase(t *testing.T) string {
	t.Helper()
	bases, _ := filepath.Glob("/root/.pyenv/versions/3.1[1-3]*/bin/python3")
	if len(bases) == 0 {
		t.Skip("no pyenv CPython 3.11-3.13 under /root/.pyenv/versions (the base interpreter outside the venv)")
	}
	if _, err := os.Stat(filepath.Join(debianPackages, "pytest")); err != nil {
		t.Skip("python3-pytest is not installed (scripts/setup-tests.sh installs it)")
	}
	return bases[0]
}

// TestRealProject is the trial of the real-projects issue as a test: a
// root-owned ai-triager workspace for a small real package (the minicalc
// fixture) whose venv's base interpreter lives outside the venv. With the
// default config, the reproducer runs the suite with the host's result,
// a failure caused by the sandbox (a tool the image lacks) says so and a
// plain failure does not, the agent runs read-only git and edits
// NOTES.md with sed -i, and a headless Chromium reproducer loads a page
// its own server serves on localhost.
func TestRealProject(t *testing.T) {
	testenv.RequireDocker(t)
	testenv.RequireRoot(t, "the workspace is root-owned, as in CI")
	base := pytestBase(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	checkout := filepath.Join(dir, "minicalc")
	ws := filepath.Join(dir, "ws")
	venv := filepath.Join(dir, "venv")
	sh(t, "", "cp", "-r", "testdata/minicalc", checkout)
	sh(t, checkout, "git", "init", "-q")
	sh(t, checkout, "git", "add", ".")
	sh(t, checkout, "git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "minicalc: first commit")
	sh(t, "", base, "-m", "venv", "--without-pip", venv)
	site, _ := filepath.Glob(filepath.Join(venv, "lib", "python3.*", "site-packages"))
	if len(site) != 1 {
		t.Fatalf("venv site-packages: %v", site)
	}
	for _, m := range pytestModules {
		sh(t, "", "cp", "-r", filepath.Join(debianPackages, m), site[0])
	}
	for _, d := range []string{"repros", "issues", ".triage"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel, body string) {
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The image's toolchain: the suite's probes need a tool (less) the
	// image lacks, whatever the host has.
	write("triage.toml", "[project]\ncheckout = \"../minicalc\"\npython = \""+filepath.Join(venv, "bin", "python")+"\"\n[sandbox]\ntoolchain = \"image\"\n")
	write("NOTES.md", "# notes\n")
	write("INDEX.md", "# index\n")
	write("repros/browse.py", browseRepro)
	cfg, err := config.Load(filepath.Join(ws, "triage.toml"))
	if err != nil {
		t.Fatal(err)
	}
	host := currentHost(t)
	build := func(role profiles.Role, workdir string) *policy.Policy {
		p, err := policy.Build(cfg, role, host, policy.Options{Workdir: workdir})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// The suite on the host, then in the sandbox: the same summary.
	hostRun := exec.Command(filepath.Join(venv, "bin", "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider")
	hostRun.Dir, hostRun.Env = checkout, append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	hostOut, err := hostRun.CombinedOutput()
	if err != nil {
		t.Fatalf("the suite fails on the host: %v\n%s", err, hostOut)
	}
	summary := regexp.MustCompile(`\d+ passed`)
	want := summary.FindString(string(hostOut))
	out, shown := runOutcome(t, build("reproducer", checkout), "python", "-m", "pytest", "-q")
	if out.ExitCode != 0 || summary.FindString(shown) != want || want == "" {
		t.Fatalf("in the sandbox: exit %d, %q; on the host %q\n%s", out.ExitCode, summary.FindString(shown), want, shown)
	}

	// A failure the sandbox causes says so; a plain failure does not.
	out, shown = runOutcome(t, build("reproducer", checkout), "python", "-m", "pytest", "-q", "sandbox_probes/test_pager.py::test_needs_a_pager")
	if out.ExitCode == 0 || !strings.Contains(strings.Join(out.Hints, "\n"), "less") {
		t.Errorf("a test that needs less: exit %d, hints %q\n%s", out.ExitCode, out.Hints, shown)
	}
	out, shown = runOutcome(t, build("reproducer", checkout), "python", "-m", "pytest", "-q", "sandbox_probes/test_pager.py::test_plain_failure")
	if out.ExitCode == 0 || len(out.Hints) != 0 {
		t.Errorf("a plain failure: exit %d, hints %q\n%s", out.ExitCode, out.Hints, shown)
	}

	// The agent: read-only git on a checkout owned by someone else, and a
	// rename-based edit of NOTES.md.
	out, shown = runOutcome(t, build("agent", checkout), "sh", "-c", "git log --oneline && git status --short && git diff --stat && echo GIT-OK")
	if out.ExitCode != 0 || !strings.Contains(shown, "minicalc: first commit") || !strings.Contains(shown, "GIT-OK") {
		t.Errorf("agent git: exit %d\n%s", out.ExitCode, shown)
	}
	out, shown = runOutcome(t, build("agent", ws), "sed", "-i", "s/# notes/# notes: minicalc triaged/", "NOTES.md")
	if b, _ := os.ReadFile(filepath.Join(ws, "NOTES.md")); out.ExitCode != 0 || string(b) != "# notes: minicalc triaged\n" {
		t.Errorf("sed -i NOTES.md: exit %d, NOTES.md %q\n%s", out.ExitCode, b, shown)
	}

	// A browser reproducer: its own server on localhost, headless Chromium.
	out, shown = runOutcome(t, build("reproducer", ws), "python", "repros/browse.py")
	if out.ExitCode != 0 || !strings.Contains(shown, "PAGE-LOADED-minicalc") {
		t.Errorf("browser reproducer: exit %d\n%s", out.ExitCode, shown)
	}
}

func sh(t *testing.T, dir string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
}

// browseRepro serves a page on localhost and loads it in headless
// Chromium, as browser reproducers do.
const browseRepro = `import http.server, shutil, subprocess, sys, tempfile, threading

class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html><body><p id=m>PAGE-LOADED-minicalc</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Page)
threading.Thread(target=server.serve_forever, daemon=True).start()
browser = shutil.which("chromium") or shutil.which("chromium-browser")
if not browser:
    sys.exit("no chromium in the image")
profile = tempfile.mkdtemp()
out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                      "--no-first-run", "--user-data-dir=" + profile, "--dump-dom",
                      "http://127.0.0.1:%d/" % server.server_port],
                     capture_output=True, text=True, timeout=90)
print(out.stdout)
sys.exit(0 if "PAGE-LOADED-minicalc" in out.stdout else 1)
`
