package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// testSettle stands in for hostread.DefaultSettle: the files these tests
// make are older than this (they wait), and this machine's filesystems
// stamp times far finer.
const testSettle = 50 * time.Millisecond

// cacheWorkspace is an ai-triager workspace with every kind of input: a
// config, a checkout that is a Go module, a venv, a read_only link.
type cacheWorkspace struct {
	base, root, checkout, venv string
	host                       policy.Host
	flags                      policyFlags
}

func newCacheWorkspace(t *testing.T) *cacheWorkspace {
	t.Helper()
	w := &cacheWorkspace{base: t.TempDir()}
	w.root = filepath.Join(w.base, "ws")
	w.checkout = filepath.Join(w.base, "widgets")
	w.venv = filepath.Join(w.base, "venv")
	gitInit(t, w.checkout)
	write(t, filepath.Join(w.checkout, "go.mod"), "module example.com/widgets\n\ngo 1.22\n")
	write(t, filepath.Join(w.checkout, "go.sum"), "")
	mkdir(t, filepath.Join(w.root, "issues"))
	write(t, filepath.Join(w.root, "NOTES.md"), "notes\n")
	mkdir(t, filepath.Join(w.base, "data-a"))
	mkdir(t, filepath.Join(w.base, "data-b"))
	symlink(t, "../data-a", filepath.Join(w.root, "data-link"))
	if out, err := exec.Command("python3", "-m", "venv", "--without-pip", w.venv).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v: %s", err, out)
	}
	w.writeConfig(t, "")
	home := filepath.Join(w.base, "home")
	mkdir(t, home)
	w.host = policy.Host{Home: home, OS: runtime.GOOS, UID: os.Getuid(), GID: os.Getgid(), Cwd: w.root,
		Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "TRIAGE_A=1", "GOPATH=" + filepath.Join(w.base, "gopath")}}
	w.flags = policyFlags{role: profiles.RoleReproducer, backend: "local"}
	time.Sleep(2 * testSettle)
	return w
}

func (w *cacheWorkspace) writeConfig(t *testing.T, extra string) {
	t.Helper()
	write(t, filepath.Join(w.root, "triage.toml"), "[project]\ncheckout = \"../widgets\"\npython = \"../venv/bin/python3\"\n\n[sandbox]\nread_only = [\"data-link\"]\nenv = [\"TRIAGE_*\"]\n"+extra)
}

// compile is one fast-path compile through c: the policy's JSON (or the
// error) and whether it came from the cache.
func (w *cacheWorkspace) compile(t *testing.T, c *compileCache) (string, bool) {
	t.Helper()
	f := w.flags
	f.cache = c
	p, _, err := f.compileWithHost2(w.host)
	if err != nil {
		return "error: " + err.Error(), f.cacheHit
	}
	if f.cacheWhy != "" {
		t.Logf("compile not kept: %s", f.cacheWhy)
	}
	if f.red == nil {
		t.Error("no redactor kept with the compile")
	}
	b, _ := json.Marshal(p)
	return string(b), f.cacheHit
}

// fresh is the CLI's own compile, no cache.
func (w *cacheWorkspace) fresh(t *testing.T) string {
	t.Helper()
	f := w.flags
	p, _, err := f.compileWithHost2(w.host)
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// compileWithHost2 is compileWithHost for host (the front's).
func (f *policyFlags) compileWithHost2(host policy.Host) (*policy.Policy, policy.Host, error) {
	f.host = func() (policy.Host, error) { return host, nil }
	return f.compileWithHost()
}

// TestCompileCacheMissesOnEveryInputKind: a kept compile is reused only
// while every input is what it was. For each kind of input, a change
// misses and compiles to what the CLI compiles afresh; the second compile
// before the change is a hit (the cache works, so the miss is the
// change's).
func TestCompileCacheMissesOnEveryInputKind(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, w *cacheWorkspace)
		// differs: the new policy is not the old one.
		differs bool
	}{
		{"touch the config", func(t *testing.T, w *cacheWorkspace) {
			now := time.Now()
			if err := os.Chtimes(filepath.Join(w.root, "triage.toml"), now, now); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"rewrite the config", func(t *testing.T, w *cacheWorkspace) {
			w.writeConfig(t, "\n[sandbox.reproducer]\ntimeout = 77\n")
		}, true},
		{"chmod the read_only directory", func(t *testing.T, w *cacheWorkspace) {
			if err := os.Chmod(filepath.Join(w.base, "data-a"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"chown go.mod", func(t *testing.T, w *cacheWorkspace) {
			if os.Getuid() != 0 {
				t.Skip("chown needs root")
			}
			if err := os.Chown(filepath.Join(w.checkout, "go.mod"), 1000, 1000); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"retarget the read_only symlink", func(t *testing.T, w *cacheWorkspace) {
			link := filepath.Join(w.root, "data-link")
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			symlink(t, "../data-b", link)
		}, true},
		{"replace go.sum", func(t *testing.T, w *cacheWorkspace) {
			mod := filepath.Join(w.base, "gopath", "pkg", "mod", "example.com", "dep@v1.0.0")
			write(t, filepath.Join(mod, "go.mod"), "module example.com/dep\n")
			tmp := filepath.Join(w.checkout, "go.sum.new")
			write(t, tmp, "example.com/dep v1.0.0 h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
			if err := os.Rename(tmp, filepath.Join(w.checkout, "go.sum")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"create the once-absent module cache", func(t *testing.T, w *cacheWorkspace) {
			mkdir(t, filepath.Join(w.base, "gopath", "pkg", "mod"))
		}, true},
		{"edit pyvenv.cfg", func(t *testing.T, w *cacheWorkspace) {
			cfg := filepath.Join(w.venv, "pyvenv.cfg")
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			write(t, cfg, strings.Replace(string(b), "include-system-site-packages = false", "include-system-site-packages = true", 1))
		}, true},
		{"create a once-absent triage.toml above", func(t *testing.T, w *cacheWorkspace) {
			write(t, filepath.Join(w.base, "triage.toml"), "[sandbox]\nwritable = [\"ws\"]\n")
		}, true},
		{"create a once-absent credential file in the home", func(t *testing.T, w *cacheWorkspace) {
			// One of the dozens of absent paths in the home the cache
			// checks as a group (the home's times): the group fails, the
			// path is checked, and it now exists.
			write(t, filepath.Join(w.host.Home, ".netrc"), "machine example.com password x\n")
		}, false},
		{"change an environment variable", func(t *testing.T, w *cacheWorkspace) {
			// The same count of variables: only a value differs.
			w.host.Env = slices.Clone(w.host.Env)
			w.host.Env[slices.Index(w.host.Env, "TRIAGE_A=1")] = "TRIAGE_A=2"
		}, true},
		{"change the working directory", func(t *testing.T, w *cacheWorkspace) {
			w.host.Cwd = filepath.Join(w.root, "issues")
		}, true},
		{"change a flag", func(t *testing.T, w *cacheWorkspace) {
			w.flags.role, w.flags.session = profiles.RoleAgent, "s1"
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newCacheWorkspace(t)
			c := &compileCache{cli: "test"}
			c.cache.Settle = testSettle
			first, hit := w.compile(t, c)
			if hit || strings.HasPrefix(first, "error") {
				t.Fatalf("first compile: hit %v, %.300s", hit, first)
			}
			if again, hit := w.compile(t, c); !hit || again != first {
				t.Fatalf("second compile, nothing changed: hit %v (want a hit of the same policy)", hit)
			}
			tt.change(t, w)
			got, hit := w.compile(t, c)
			if hit {
				t.Fatal("after the change: a hit, want a miss")
			}
			if want := w.fresh(t); got != want {
				t.Errorf("after the change the compile is not the CLI's:\n got %.400s\nwant %.400s", got, want)
			}
			if tt.differs && got == first {
				t.Errorf("after the change the policy is the old one: the change did not reach it, so this case proves nothing")
			}
		})
	}
}

// TestCompileCacheCapabilities: a backend's capabilities are asked again
// at every use (the local backend probes the host for them outside the
// recorder): when they change, the kept compile is not used.
func TestCompileCacheCapabilities(t *testing.T) {
	w := newCacheWorkspace(t)
	caps := []policy.Capability{profiles.CapOwnLoopback, profiles.CapHostRoot, profiles.CapMaskUnderMount, profiles.CapBoundedWrites}
	c := &compileCache{cli: "test", caps: func(string) ([]policy.Capability, bool) { return caps, true }}
	c.cache.Settle = testSettle
	if _, hit := w.compile(t, c); hit {
		t.Fatal("first compile: a hit")
	}
	if _, hit := w.compile(t, c); !hit {
		t.Fatal("second compile: a miss, want a hit")
	}
	caps = append(slices.Clone(caps), profiles.CapMemoryLimit)
	if _, hit := w.compile(t, c); hit {
		t.Error("capabilities changed: a hit, want a miss")
	}
}

// TestCompileCacheSettle: a compile that read a file changed within the
// settle time is not kept (a second change in the same clock tick would
// keep its identity), and says why.
func TestCompileCacheSettle(t *testing.T) {
	w := newCacheWorkspace(t)
	c := &compileCache{cli: "test"} // hostread.DefaultSettle
	w.writeConfig(t, "\n[sandbox.reproducer]\ntimeout = 78\n")
	f := w.flags
	f.cache = c
	if _, _, err := f.compileWithHost2(w.host); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.cacheWhy, "changed less than") || c.cache.Len() != 0 {
		t.Errorf("a compile of a config written just now was kept (%d kept; why not: %q)", c.cache.Len(), f.cacheWhy)
	}
	if _, hit := w.compile(t, c); hit {
		t.Error("a hit of a compile that was not kept")
	}
}

// TestCompileCacheHitIsACopy: what a run does to its policy never reaches
// the next run's.
func TestCompileCacheHitIsACopy(t *testing.T) {
	w := newCacheWorkspace(t)
	c := &compileCache{cli: "test"}
	c.cache.Settle = testSettle
	first, _ := w.compile(t, c)
	f := w.flags
	f.cache = c
	p, _, err := f.compileWithHost2(w.host)
	if err != nil || !f.cacheHit {
		t.Fatalf("hit %v, err %v (kept: %d)", f.cacheHit, err, c.cache.Len())
	}
	p.Warnings, p.Backend = []string{"changed"}, "changed"
	if again, hit := w.compile(t, c); !hit || again != first {
		t.Errorf("hit %v; the kept policy changed with a run's copy", hit)
	}
}

// TestKeptHashIsTheRunsHash: the hash a kept compile remembers
// (derived.hash, named in each run's audit record and report) is the
// Hash of the policy the run gets, and a recompile after a change does
// not inherit the old one.
func TestKeptHashIsTheRunsHash(t *testing.T) {
	w := newCacheWorkspace(t)
	c := &compileCache{cli: "test"}
	c.cache.Settle = testSettle
	hashOf := func() (string, string, bool) {
		t.Helper()
		f := w.flags
		f.cache = c
		p, _, err := f.compileWithHost2(w.host)
		if err != nil {
			t.Fatal(err)
		}
		if f.kept == nil {
			t.Fatalf("compile not kept: %s", f.cacheWhy)
		}
		if kw, w := f.keptWarmHash(), p.WarmHash(); kw != w {
			t.Fatalf("kept warm hash %s, the run's policy's %s", kw, w)
		}
		return f.policyHash(p), p.Hash(), f.cacheHit
	}
	for i := 0; i < 2; i++ {
		if kept, run, hit := hashOf(); kept != run || hit != (i == 1) {
			t.Fatalf("compile %d (hit %v): kept hash %s, the run's policy's %s", i, hit, kept, run)
		}
	}
	first, _, _ := hashOf()
	w.writeConfig(t, "memory = \"3g\"\n")
	time.Sleep(2 * testSettle)
	kept, run, hit := hashOf()
	if hit || kept != run || kept == first {
		t.Errorf("after a change (hit %v): kept hash %s, the run's policy's %s, before %s", hit, kept, run, first)
	}
}
