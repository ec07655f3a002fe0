package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/runreport"
)

// goDepsCache fills a module cache the way `go mod download` does on a
// maintainer's machine, for the godeps fixture's dependency
// (testdata/goproxy), served from a local module proxy (a directory): no
// network. It returns the cache, which also holds a module that go.sum
// does not name (the maintainer's other work).
func goDepsCache(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the host has no go")
	}
	dir := t.TempDir()
	proxy := filepath.Join(dir, "proxy")
	publish(t, proxy, module.Version{Path: "example.com/greet", Version: "v1.0.0"}, filepath.Join("testdata", "goproxy", "example.com", "greet@v1.0.0"))
	private := filepath.Join(dir, "private-src")
	must(t, os.MkdirAll(private, 0o755))
	must(t, os.WriteFile(filepath.Join(private, "go.mod"), []byte("module private.example/secret\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(private, "secret.go"), []byte("package secret\n\nconst Key = \"private-work\"\n"), 0o644))
	publish(t, proxy, module.Version{Path: "private.example/secret", Version: "v0.1.0"}, private)

	cache := filepath.Join(dir, "modcache")
	cmd := exec.Command("go", "mod", "download", "example.com/greet@v1.0.0", "private.example/secret@v0.1.0")
	cmd.Dir = filepath.Join("testdata", "realprojects", "godeps")
	cmd.Env = append(os.Environ(), "GOMODCACHE="+cache, "GOPROXY=file://"+proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		c := exec.Command("go", "clean", "-modcache")
		c.Env = append(os.Environ(), "GOMODCACHE="+cache)
		_ = c.Run()
	})
	return cache
}

// publish puts module version v, from the directory src, in a file-based
// module proxy.
func publish(t *testing.T, proxy string, v module.Version, src string) {
	t.Helper()
	dir := filepath.Join(proxy, filepath.FromSlash(v.Path), "@v")
	must(t, os.MkdirAll(dir, 0o755))
	f, err := os.Create(filepath.Join(dir, v.Version+".zip"))
	must(t, err)
	defer f.Close()
	must(t, modzip.CreateFromDir(f, v, src))
	mod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, v.Version+".mod"), mod, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, v.Version+".info"), []byte(`{"Version":"`+v.Version+`","Time":"2024-01-01T00:00:00Z"}`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "list"), []byte(v.Version+"\n"), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestGoModuleWithDependencies: `go test ./...` of a Go module with a
// third-party dependency passes in a reproducer with the default config
// and the network off, cold (no prepared cache, on docker: a long timeout,
// as a cold build of the standard library takes minutes on a loaded
// machine) and warm (after `prepare`, within the default timeout): the module go.sum
// names is readable from the host's module cache, the cache's other
// modules are not, what a reproducer writes in the prepared cache reaches
// neither the host nor the next reproducer, and the host checkout is
// unchanged.
func TestGoModuleWithDependencies(t *testing.T) {
	for _, backend := range realProjectBackends(t) {
		t.Run(backend, func(t *testing.T) {
			cache := goDepsCache(t)
			root, checkout := realProject(t, "godeps")
			env := []string{"GOMODCACHE=" + cache}
			run := func(name string, args ...string) time.Duration {
				t.Helper()
				rep, took, stderr := runReportEnv(t, root, env, append([]string{"--role", "reproducer", "--backend", backend, "--workdir", checkout}, args...)...)
				if rep.ExitCode != 0 {
					t.Fatalf("%s: exit %d\nstdout %s\nstderr %s\nhints %q warnings %q", name, rep.ExitCode, rep.Stdout, rep.Stderr, rep.Hints, rep.Warnings)
				}
				if !strings.Contains(rep.Stdout, "ok  \texample.com/godeps") || strings.Contains(rep.Stdout, "private.example") {
					t.Errorf("%s: stdout: %s", name, rep.Stdout)
				}
				if prepared := !strings.Contains(stderr, "run `triage-sandbox prepare`"); prepared != (name != "cold") {
					t.Errorf("%s: the warning that the cache is not prepared is wrong: %s", name, stderr)
				}
				t.Logf("%s: %v", name, took.Round(time.Millisecond))
				return took
			}
			// Cold on the first backend only: a cold build is minutes of
			// CPU, and prepare below is one on every backend.
			if backend == "docker" {
				run("cold", "--timeout", "15m", "--", "sh", "-c", "go test ./... && go env GOPROXY && ls "+cache+" "+cache+"/cache/download")
			}

			if r := runCLI(t, root, env, "prepare", "--backend", backend); r.code != 0 {
				t.Fatalf("prepare: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			run("warm", "--", "sh", "-c", `go test ./... && echo poison > "$(go env GOCACHE)/poison" && ls "$(go env GOCACHE)/poison" `+cache+" "+cache+"/cache/download")
			run("warm again", "--", "sh", "-c", `test ! -e "$(go env GOCACHE)/poison" && go test ./...`)
			if found, _ := filepath.Glob(filepath.Join(stateDir(t), "triage-sandbox", "caches", "go", "*", "poison")); len(found) > 0 {
				t.Errorf("a reproducer's write reached the prepared cache: %q", found)
			}
			checkoutUnchanged(t, checkout)
		})
	}
}

// runReportEnv is runReport with variables added to the CLI's environment.
// Policy warnings are on stderr, returned too.
func runReportEnv(t *testing.T, root string, env []string, args ...string) (runreport.Report, time.Duration, string) {
	t.Helper()
	start := time.Now()
	r := runCLI(t, root, env, append([]string{"run", "--json"}, args...)...)
	took := time.Since(start)
	var rep runreport.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("run %v: exit %d, --json: %v\nstdout %q\nstderr %s", args, r.code, err, r.stdout, r.stderr)
	}
	return rep, took, r.stderr
}

// TestGoModuleMissingDependencyHint: a module go.sum names that the host's
// cache lacks is named in a warning, and go's failure ends with the hint
// that names the recipe (go mod download on the host), not the network.
func TestGoModuleMissingDependencyHint(t *testing.T) {
	testenv.SkipShort(t, "runs a sandbox")
	testenv.RequireDocker(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the host has no go")
	}
	root := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	checkout := filepath.Join(filepath.Dir(root), "widgets")
	if out, err := exec.Command("cp", "-a", filepath.Join("testdata", "realprojects", "godeps")+"/.", checkout).CombinedOutput(); err != nil {
		t.Fatalf("copying: %v: %s", err, out)
	}
	empty := t.TempDir()
	must(t, os.Chmod(empty, 0o755))
	rep, _, stderr := runReportEnv(t, root, []string{"GOMODCACHE=" + empty}, "--role", "reproducer", "--workdir", checkout, "--", "go", "list", "-deps", "./...")
	if rep.ExitCode == 0 {
		t.Fatalf("go list passed without its dependency: %s", rep.Stdout)
	}
	if !strings.Contains(stderr, "example.com/greet@v1.0.0") || !strings.Contains(stderr, "`go mod download`") {
		t.Errorf("no warning naming the missing module: %s", stderr)
	}
	if !strings.Contains(strings.Join(rep.Hints, "\n"), "`go mod download` in the checkout") {
		t.Errorf("hints %q\nstderr %s", rep.Hints, rep.Stderr)
	}
}

// TestGoModuleWithDependenciesAsUser: the same Go module as
// TestGoModuleWithDependencies, for a normal user (in the docker group on
// docker; on local with no cgroup of its own) whose module cache is where
// go puts it by default (~/go/pkg/mod, found without GOMODCACHE): prepare,
// then a reproducer's `go test ./...` with the default config passes, reads
// only the module go.sum names, and the host checkout is unchanged.
func TestGoModuleWithDependenciesAsUser(t *testing.T) {
	for _, backend := range []string{"docker", "local"} {
		t.Run(backend, func(t *testing.T) {
			testenv.SkipShort(t, "runs a real project's tests in sandboxes")
			testenv.RequireRoot(t, "gives the checkout to another uid and runs the CLI as a normal user")
			testenv.RequireDocker(t)
			cache := goDepsCache(t)
			config := "[project]\ncheckout = \"../widgets\"\n"
			if backend == "local" {
				// A normal user has no cgroup of its own here.
				config += "[sandbox]\naccept_weaker = [\"memory_limit\", \"pids_limit\", \"cpu_limit\"]\n"
			}
			root, checkout := ownedProject(t, "godeps", config, "", true)
			home := userHome(t)
			modcache := filepath.Join(home, "go", "pkg", "mod")
			must(t, os.MkdirAll(filepath.Dir(modcache), 0o755))
			for _, c := range [][]string{{"cp", "-a", cache, modcache}, {"chown", "-R", fmt.Sprintf("%d:%d", projectUser, projectUser), filepath.Join(home, "go")}} {
				if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%v: %v: %s", c, err, out)
				}
			}
			before := treeHash(t, checkout)
			if r := runAsUserWithHome(t, home, root, "prepare", "--backend", backend); r.code != 0 {
				t.Fatalf("prepare: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r := runAsUserWithHome(t, home, root, "run", "--json", "--role", "reproducer", "--backend", backend, "--workdir", checkout, "--",
				"sh", "-c", "go test ./... && id -u && ls "+modcache+"/cache/download")
			var rep runreport.Report
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("exit %d, --json: %v\nstdout %q\nstderr %s", r.code, err, r.stdout, r.stderr)
			}
			if rep.ExitCode != 0 {
				t.Fatalf("go test: exit %d\nstdout %s\nstderr %s\nhints %q warnings %q", rep.ExitCode, rep.Stdout, rep.Stderr, rep.Hints, rep.Warnings)
			}
			if !strings.Contains(rep.Stdout, "ok  \texample.com/godeps") || strings.Contains(rep.Stdout, "private.example") ||
				!strings.Contains(rep.Stdout, fmt.Sprintf("\n%d\n", projectUser)) {
				t.Errorf("stdout: %s", rep.Stdout)
			}
			if strings.Contains(r.stderr, "run `triage-sandbox prepare`") {
				t.Errorf("the prepared cache was not used: %s", r.stderr)
			}
			if after := treeHash(t, checkout); after != before {
				t.Errorf("the host checkout changed: %s before, %s after", before, after)
			}
		})
	}
}
