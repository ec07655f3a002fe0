package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/hostread"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// compileHelperEnv, in TestMain, makes the test binary the child of
// TestCompileReadsAreRecorded: it compiles the jobs the file it names
// lists, between markers, and writes what each compile recorded.
const compileHelperEnv = "TRIAGE_SANDBOX_TEST_COMPILE_JOBS"

// markDir is where the child's markers point: a path that never exists,
// looked up (and seen by strace) just before and after each compile.
const markDir = "/nonexistent-triage-sandbox-compile-mark"

func TestMain(m *testing.M) {
	if jobs := os.Getenv(compileHelperEnv); jobs != "" {
		os.Exit(compileHelper(jobs))
	}
	os.Exit(m.Run())
}

// compileJob is one compile the child runs, as a keeper's fast path does
// on a miss (compileRecorded): flags, and the host the front sends.
type compileJob struct {
	Config, Role, Backend, Session string
	Cwd, Home                      string
	Env                            []string
	// Drop removes the reads of paths ending in it from the record: the
	// mutation that shows the check fails when an input goes unrecorded.
	Drop string
}

type compileResult struct {
	Reads []hostread.Read
	Err   string
}

func compileHelper(jobsFile string) int {
	b, err := os.ReadFile(jobsFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var jobs []compileJob
	if err := json.Unmarshal(b, &jobs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	results := make([]compileResult, len(jobs))
	for i, j := range jobs {
		f := policyFlags{config: j.Config, role: profiles.Role(j.Role), backend: j.Backend, session: j.Session}
		host := policy.Host{Home: j.Home, Env: j.Env, OS: runtime.GOOS, UID: os.Getuid(), GID: os.Getgid(), Cwd: j.Cwd}
		_, _ = os.Lstat(fmt.Sprintf("%s/begin-%d", markDir, i))
		_, _, reads, _, err := f.compileRecorded(host)
		_, _ = os.Lstat(fmt.Sprintf("%s/end-%d", markDir, i))
		if j.Drop != "" {
			reads = slices.DeleteFunc(reads, func(r hostread.Read) bool { return strings.HasSuffix(r.Path, j.Drop) })
		}
		results[i].Reads = reads
		if err != nil {
			results[i].Err = err.Error()
		}
	}
	out, _ := json.Marshal(results)
	if err := os.WriteFile(jobsFile+".out", out, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// access is one path a system call of the compile named.
type access struct {
	path string
	// under: the call named an entry of this directory by descriptor
	// (fstatat on a directory being listed).
	under string
	line  string
}

var (
	straceCall = regexp.MustCompile(`^(?:\d+\s+)?([a-z0-9_]+)\((.*)$`)
	fdArg      = regexp.MustCompile(`^-?\d+<([^>]*)>, "((?:[^"\\]|\\.)*)"`)
	cwdArg     = regexp.MustCompile(`^AT_FDCWD(?:<[^>]*>)?, "((?:[^"\\]|\\.)*)"`)
	plainArg   = regexp.MustCompile(`^"((?:[^"\\]|\\.)*)"`)
)

// compileAccesses splits strace's output into the accesses of each
// compile, between its markers. cwd resolves a relative path.
func compileAccesses(t *testing.T, trace, cwd string) map[int][]access {
	t.Helper()
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int][]access{}
	cur := -1
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "resumed>") {
			continue // its path was on the <unfinished ...> line
		}
		m := straceCall.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := access{line: line}
		args := m[2]
		switch {
		case cwdArg.MatchString(args):
			a.path = cwdArg.FindStringSubmatch(args)[1]
		case plainArg.MatchString(args):
			a.path = plainArg.FindStringSubmatch(args)[1]
		case fdArg.MatchString(args):
			fm := fdArg.FindStringSubmatch(args)
			if fm[2] == "" {
				continue // fstat of an open descriptor: its open was seen
			}
			a.path, a.under = filepath.Join(fm[1], fm[2]), fm[1]
			if filepath.IsAbs(fm[2]) {
				a.path, a.under = fm[2], ""
			}
		default:
			continue
		}
		if strings.HasPrefix(a.path, markDir+"/") {
			var n int
			if _, err := fmt.Sscanf(strings.TrimPrefix(a.path, markDir+"/begin-"), "%d", &n); err == nil && strings.Contains(a.path, "/begin-") {
				cur = n
			} else {
				cur = -1
			}
			continue
		}
		if cur < 0 {
			continue
		}
		if !filepath.IsAbs(a.path) {
			a.path = filepath.Join(cwd, a.path)
		}
		out[cur] = append(out[cur], a)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// processOwn are paths a compile may touch that are not the host's
// policy inputs, each with why.
var processOwn = []struct{ prefix, why string }{
	{"/proc/self/", "the process's own facts (its executable for the hand-off check), not the host's"},
	{"/etc/localtime", "the time zone, for timestamps; no policy decision reads it"},
	{"/usr/share/zoneinfo/", "the time zone, for timestamps; no policy decision reads it"},
	{"/sys/kernel/mm/transparent_hugepage/", "the Go runtime's memory tuning"},
	{"/sys/fs/cgroup/", "the local backend's capability probe (cgroups): not a recorded read, the capabilities are asked again at every use of a kept compile (compileCache.caps)"},
}

// uncovered lists the accesses no recorded read covers: the same path,
// or an entry of a directory recorded as listed.
func uncovered(accesses []access, reads []hostread.Read) []string {
	recorded, listed := map[string]bool{}, map[string]bool{}
	for _, r := range reads {
		recorded[r.Path] = true
		if r.Kind == hostread.List {
			listed[r.Path] = true
		}
	}
	var out []string
	for _, a := range accesses {
		if recorded[a.path] || (a.under != "" && listed[a.under]) {
			continue
		}
		if slices.ContainsFunc(processOwn, func(o struct{ prefix, why string }) bool {
			return strings.HasPrefix(a.path, o.prefix) || a.path == strings.TrimSuffix(o.prefix, "/")
		}) {
			continue
		}
		out = append(out, a.path+"  ("+a.line+")")
	}
	return out
}

// compileWorkspace is a workspace of one layout and the jobs that compile
// it.
type compileWorkspace struct {
	name string
	jobs []compileJob
	// wantErr: the compile is refused, with this in its error.
	wantErr string
}

// compileWorkspaces makes the layouts the record must cover: ai-triager's
// (outputs, a git checkout, read_only, a secret-looking path in the
// environment), a Go module (go.mod, go.sum naming a module in the module
// cache), a python venv, no triage.toml at all, and symlinked paths (the
// workspace reached through a link, a read_only link; an output that is a
// link, refused).
func compileWorkspaces(t *testing.T) []compileWorkspace {
	t.Helper()
	base := t.TempDir()
	home := filepath.Join(base, "home")
	mkdir(t, filepath.Join(home, ".config", "gh"))
	write(t, filepath.Join(home, ".config", "gh", "hosts.yml"), "oauth_token: x\n")
	secretish := filepath.Join(base, "Xq7Rk2m9Pz4Lw8NvB3cD")
	write(t, secretish, "")
	env := []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
		"TRIAGE_CACHE_DIR=" + secretish, "GITHUB_TOKEN=ghp_0123456789abcdefABCDEF0123456789abcd"}
	jobs := func(cwd string, env []string, roles ...string) []compileJob {
		var js []compileJob
		for _, role := range roles {
			for _, b := range []string{"local", "docker"} {
				j := compileJob{Role: role, Backend: b, Cwd: cwd, Home: home, Env: env}
				if role == "agent" {
					j.Session = "s1"
				}
				js = append(js, j)
			}
		}
		return js
	}
	var out []compileWorkspace

	// ai-triager's layout: triage.toml, outputs, a git checkout beside.
	tri := filepath.Join(base, "triager", "ws")
	co := filepath.Join(base, "triager", "widgets")
	gitInit(t, co)
	mkdir(t, filepath.Join(tri, "issues"))
	mkdir(t, filepath.Join(tri, ".triage"))
	mkdir(t, filepath.Join(base, "triager", "docs"))
	write(t, filepath.Join(tri, "NOTES.md"), "notes\n")
	write(t, filepath.Join(tri, "INDEX.md"), "index\n")
	write(t, filepath.Join(tri, "triage.toml"), "[project]\ncheckout = \"../widgets\"\n\n[sandbox]\nread_only = [\"../docs\"]\nenv = [\"TRIAGE_*\"]\n")
	out = append(out, compileWorkspace{name: "ai-triager", jobs: jobs(tri, env, "agent", "reproducer")})

	// A Go module: go.mod, go.sum naming a module the module cache holds.
	gows := filepath.Join(base, "gomod", "ws")
	goco := filepath.Join(base, "gomod", "mod")
	modcache := filepath.Join(base, "gopath", "pkg", "mod")
	mkdir(t, filepath.Join(modcache, "example.com", "dep@v1.2.3"))
	write(t, filepath.Join(modcache, "example.com", "dep@v1.2.3", "go.mod"), "module example.com/dep\n")
	mkdir(t, filepath.Join(modcache, "cache", "download", "example.com", "dep", "@v"))
	write(t, filepath.Join(modcache, "cache", "download", "example.com", "dep", "@v", "v1.2.3.mod"), "module example.com/dep\n")
	gitInit(t, goco)
	write(t, filepath.Join(goco, "go.mod"), "module example.com/widgets\n\ngo 1.22\n\nrequire example.com/dep v1.2.3\n")
	write(t, filepath.Join(goco, "go.sum"), "example.com/dep v1.2.3 h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nexample.com/dep v1.2.3/go.mod h1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB=\n")
	write(t, filepath.Join(gows, "triage.toml"), "[project]\ncheckout = \"../mod\"\n")
	goEnv := append(slices.Clone(env), "GOPATH="+filepath.Join(base, "gopath"))
	out = append(out, compileWorkspace{name: "go module", jobs: jobs(gows, goEnv, "agent", "reproducer")})

	// A python venv the reproducer runs.
	pyws := filepath.Join(base, "py", "ws")
	venv := filepath.Join(base, "py", "checkout", ".venv")
	mkdir(t, filepath.Join(base, "py", "checkout"))
	if out, err := exec.Command("python3", "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v: %s", err, out)
	}
	write(t, filepath.Join(pyws, "triage.toml"), "[project]\ncheckout = \"../checkout\"\npython = \"../checkout/.venv/bin/python3\"\n")
	out = append(out, compileWorkspace{name: "python venv", jobs: jobs(pyws, env, "reproducer", "agent")})

	// No triage.toml anywhere: the built-in defaults, every parent looked at.
	bare := filepath.Join(base, "bare", "project")
	mkdir(t, bare)
	out = append(out, compileWorkspace{name: "no triage.toml", jobs: jobs(bare, env, "agent", "reproducer")})

	// Symlinks: the workspace through a link, read_only a link.
	real := filepath.Join(base, "links", "real")
	mkdir(t, filepath.Join(real, "issues"))
	mkdir(t, filepath.Join(base, "links", "data"))
	symlink(t, "../data", filepath.Join(real, "data-link"))
	write(t, filepath.Join(real, "triage.toml"), "[sandbox]\nread_only = [\"data-link\"]\n")
	symlink(t, real, filepath.Join(base, "links", "via"))
	out = append(out, compileWorkspace{name: "symlinked paths", jobs: jobs(filepath.Join(base, "links", "via"), env, "agent", "reproducer")})

	// An output that is a symlink: refused; what was read is still listed.
	sym := filepath.Join(base, "symout", "ws")
	mkdir(t, filepath.Join(base, "symout", "elsewhere"))
	mkdir(t, sym)
	symlink(t, "../elsewhere", filepath.Join(sym, "issues"))
	write(t, filepath.Join(sym, "triage.toml"), "[sandbox]\nwritable = [\"issues\"]\n")
	out = append(out, compileWorkspace{name: "symlinked output", jobs: jobs(sym, env, "agent"), wantErr: "symlink"})
	return out
}

// TestCompileReadsAreRecorded proves the compile's record complete: each
// workspace layout is compiled under strace, and every path the process
// stat'ed, opened or read a link of between the compile's markers must
// be one the recorder noted (processOwn excepted, each with its reason).
// The mutation subtests drop one input from the record and must fail.
func TestCompileReadsAreRecorded(t *testing.T) {
	testenv.SkipShort(t, "runs the compile under strace (a test-tier package)")
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is not installed: scripts/setup-tests.sh installs it (apt-get install -y strace)")
	}
	workspaces := compileWorkspaces(t)
	run := func(t *testing.T, jobs []compileJob) ([]compileResult, map[int][]access) {
		t.Helper()
		dir := t.TempDir()
		jobsFile := filepath.Join(dir, "jobs.json")
		b, _ := json.Marshal(jobs)
		write(t, jobsFile, string(b))
		trace := filepath.Join(dir, "trace")
		cmd := exec.Command(strace, "-f", "-y", "-qq", "-e", "trace=%file", "-e", "signal=none", "-o", trace, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), compileHelperEnv+"="+jobsFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("strace of the compile: %v: %s", err, out)
		}
		rb, err := os.ReadFile(jobsFile + ".out")
		if err != nil {
			t.Fatal(err)
		}
		var results []compileResult
		if err := json.Unmarshal(rb, &results); err != nil {
			t.Fatal(err)
		}
		return results, compileAccesses(t, trace, dir)
	}
	for _, ws := range workspaces {
		t.Run(ws.name, func(t *testing.T) {
			results, accesses := run(t, ws.jobs)
			for i, j := range ws.jobs {
				res := results[i]
				if (res.Err != "") != (ws.wantErr != "") || !strings.Contains(res.Err, ws.wantErr) {
					t.Errorf("%s/%s: compile error %q, want one with %q", j.Role, j.Backend, res.Err, ws.wantErr)
				}
				if len(accesses[i]) == 0 {
					t.Errorf("%s/%s: strace saw no access between the markers: the trace is not read right", j.Role, j.Backend)
				}
				if miss := uncovered(accesses[i], res.Reads); len(miss) > 0 {
					t.Errorf("%s/%s: the compile looked at %d path(s) its record lacks:\n  %s", j.Role, j.Backend, len(miss), strings.Join(miss, "\n  "))
				}
				t.Logf("%s/%s: %d accesses, %d recorded reads", j.Role, j.Backend, len(accesses[i]), len(res.Reads))
			}
		})
	}
	// The check fails when the record lacks one input.
	for _, m := range []struct{ workspace, role, drop string }{
		{"ai-triager", "agent", "triage.toml"},
		{"go module", "reproducer", "go.sum"},
		{"python venv", "reproducer", "pyvenv.cfg"},
		{"ai-triager", "agent", "widgets/.git/config"},
		{"no triage.toml", "agent", "/bare/triage.toml"},
	} {
		t.Run("mutation: "+m.workspace+" without "+m.drop, func(t *testing.T) {
			i := slices.IndexFunc(workspaces, func(w compileWorkspace) bool { return w.name == m.workspace })
			j := slices.IndexFunc(workspaces[i].jobs, func(j compileJob) bool { return j.Role == m.role })
			job := workspaces[i].jobs[j]
			job.Drop = m.drop
			results, accesses := run(t, []compileJob{job})
			miss := uncovered(accesses[0], results[0].Reads)
			if !slices.ContainsFunc(miss, func(s string) bool { return strings.Contains(strings.Fields(s)[0], m.drop) }) {
				t.Errorf("dropping %s from the record: the check did not see it missing (uncovered: %v)", m.drop, miss)
			}
		})
	}
}

func mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t testing.TB, path, body string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	mkdir(t, filepath.Dir(link))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// gitInit makes dir a git checkout with one commit.
func gitInit(t testing.TB, dir string) {
	t.Helper()
	mkdir(t, dir)
	write(t, filepath.Join(dir, "README"), "widgets\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "fixture"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
}
