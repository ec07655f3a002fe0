package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// goProject makes a workspace whose checkout is a Go module, and a host
// whose go (the host toolchain's, on PATH) the sandbox runs.
func goProject(t *testing.T) (*Policy, Host, func() *Policy) {
	t.Helper()
	goBin, err := lookGo()
	if err != nil {
		t.Skip("the host has no go")
	}
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	checkout := filepath.Join(filepath.Dir(cfg.Root), "widgets")
	must(t, os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module example.com/w\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(checkout, "go.sum"), []byte(""), 0o644))
	host := fakeHost(t, "PATH="+filepath.Dir(goBin), "XDG_STATE_HOME="+t.TempDir(), "GOMODCACHE="+t.TempDir())
	build := func() *Policy {
		t.Helper()
		p, err := Build(cfg, profiles.RoleReproducer, host, Options{})
		must(t, err)
		return p
	}
	return build(), host, build
}

func lookGo() (string, error) {
	for _, dir := range []string{"/usr/local/go/bin", "/usr/bin"} {
		if fi, err := os.Stat(filepath.Join(dir, "go")); err == nil && fi.Mode().IsRegular() {
			return filepath.Join(dir, "go"), nil
		}
	}
	return "", os.ErrNotExist
}

// TestPreparedGoCache: a Go project's cache is keyed by go.mod and go.sum
// (another key, another directory); until prepared it is not mounted and
// the reproducer is told so; once prepared it is a discard mount GOCACHE
// names.
func TestPreparedGoCache(t *testing.T) {
	p, host, build := goProject(t)
	if p.GoCache == nil || p.GoCache.Ready {
		t.Fatalf("GoCache = %+v, want one not ready", p.GoCache)
	}
	if !within(stateDir(host), p.GoCache.Dir) {
		t.Errorf("the cache %s is not in the state directory %s", p.GoCache.Dir, stateDir(host))
	}
	if envValue(p, "GOCACHE") != "" || !strings.Contains(strings.Join(p.Warnings, "\n"), "triage-sandbox prepare") {
		t.Errorf("GOCACHE %q, warnings %q", envValue(p, "GOCACHE"), p.Warnings)
	}
	must(t, os.WriteFile(filepath.Join(p.GoCache.Project, "go.sum"), []byte("example.com/x v1.0.0/go.mod h1:x=\n"), 0o644))
	if q := build(); q.GoCache.Dir == p.GoCache.Dir {
		t.Errorf("go.sum changed but the key did not: %s", q.GoCache.Dir)
	}
	must(t, os.WriteFile(filepath.Join(p.GoCache.Project, "go.sum"), []byte(""), 0o644))

	prep, err := ForGoCachePrepare(p, host)
	must(t, err)
	q := prep.Policy
	var writable []string
	for _, m := range q.Mounts {
		if !m.ReadOnly {
			writable = append(writable, m.Path)
		}
	}
	if !slices.Equal(writable, []string{prep.Building}) || envValue(q, "GOCACHE") != prep.Building {
		t.Errorf("prepare: writable %q, GOCACHE %q, want only %s", writable, envValue(q, "GOCACHE"), prep.Building)
	}
	if slices.Contains(q.Unreadable, stateDir(host)) || q.Timeout() != PrepareTimeout {
		t.Errorf("prepare: unreadable %q, timeout %v", q.Unreadable, q.Timeout())
	}
	must(t, prep.Commit())

	r := build()
	if r.GoCache == nil || !r.GoCache.Ready || r.GoCache.Dir != p.GoCache.Dir {
		t.Fatalf("after prepare: %+v", r.GoCache)
	}
	i := slices.IndexFunc(r.Mounts, func(m Mount) bool { return m.Path == r.GoCache.Dir })
	if i < 0 || !r.Mounts[i].ReadOnly || !r.Mounts[i].Discard {
		t.Errorf("the cache's mount: %+v", r.Mounts)
	}
	if envValue(r, "GOCACHE") != r.GoCache.Dir {
		t.Errorf("GOCACHE = %q", envValue(r, "GOCACHE"))
	}
}
