package policy

import (
	"github.com/triage-sandbox/triage-sandbox/config"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// fakeModCache fills a module cache under dir/mod with the files the go
// command leaves for each "path@version" (escaped as the cache escapes
// them), and returns it.
func fakeModCache(t testing.TB, dir string, versions ...string) string {
	t.Helper()
	check := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(dir, "mod")
	for _, pv := range versions {
		path, ver, _ := strings.Cut(pv, "@")
		dl := filepath.Join(cache, "cache", "download", path, "@v")
		check(os.MkdirAll(dl, 0o755))
		for _, ext := range []string{".mod", ".info", ".ziphash", ".zip"} {
			check(os.WriteFile(filepath.Join(dl, ver+ext), []byte("x"), 0o444))
		}
		check(os.MkdirAll(filepath.Join(cache, path+"@"+ver), 0o755))
		check(os.WriteFile(filepath.Join(cache, path+"@"+ver, "a.go"), []byte("package a\n"), 0o444))
	}
	return cache
}

func mountPaths(p *Policy, cache string) []string {
	var out []string
	for _, m := range p.Mounts {
		if within(cache, m.Path) {
			rel, _ := filepath.Rel(cache, m.Path)
			out = append(out, rel)
		}
	}
	return out
}

// TestGoSumModulesMounted: a checkout's go.sum decides which of the host
// cache's module versions are mounted, read-only, and nothing else of the
// cache (another module, another version, the zips) is; go is told to
// stay off the network.
func TestGoSumModulesMounted(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	checkout := filepath.Join(filepath.Dir(cfg.Root), "widgets")
	cache := fakeModCache(t, t.TempDir(), "example.com/dep@v1.2.0", "example.com/dep@v1.1.0",
		"example.com/!big@v0.1.0", "private.example/secret@v1.0.0", "example.com/graph@v1.0.0")
	must(t, os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module example.com/w\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(checkout, "go.sum"), []byte(
		"example.com/dep v1.2.0 h1:aaa=\nexample.com/dep v1.2.0/go.mod h1:bbb=\n"+
			"example.com/Big v0.1.0 h1:ccc=\n"+
			"example.com/graph v1.0.0/go.mod h1:ddd=\n"), 0o644))
	p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t, "GOMODCACHE="+cache), Options{})
	must(t, err)
	got := mountPaths(p, cache)
	want := []string{
		"cache/download/example.com/!big/@v/v0.1.0.info", "cache/download/example.com/!big/@v/v0.1.0.mod", "cache/download/example.com/!big/@v/v0.1.0.ziphash",
		"cache/download/example.com/dep/@v/v1.2.0.info", "cache/download/example.com/dep/@v/v1.2.0.mod", "cache/download/example.com/dep/@v/v1.2.0.ziphash",
		"cache/download/example.com/graph/@v/v1.0.0.info", "cache/download/example.com/graph/@v/v1.0.0.mod",
		"example.com/!big@v0.1.0", "example.com/dep@v1.2.0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mounted from the cache:\n got %q\nwant %q", got, want)
	}
	for _, m := range p.Mounts {
		if within(cache, m.Path) && (!m.ReadOnly || m.Discard || !strings.Contains(m.Why, "go.sum")) {
			t.Errorf("%s: want read-only with a why naming go.sum, got %+v", m.Path, m)
		}
	}
	for name, want := range map[string]string{"GOMODCACHE": cache, "GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local"} {
		if got := envValue(p, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if len(p.Warnings) > 0 {
		t.Errorf("warnings: %q", p.Warnings)
	}
}

// TestGoSumHostile: go.sum is hostile input: paths that are not module
// paths, that climb out of the cache or go through a symlink in it mount
// nothing; set_env still wins over the Go variables.
func TestGoSumHostile(t *testing.T) {
	dir := t.TempDir()
	cache := fakeModCache(t, dir, "example.com/ok@v1.0.0", "example.com/linked-target@v1.0.0")
	outside := filepath.Join(dir, "outside")
	must(t, os.MkdirAll(filepath.Join(outside, "@v"), 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "@v", "v1.0.0.mod"), []byte("secret"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(cache, "cache", "download", "example.com", "linked")))
	must(t, os.Symlink(filepath.Join(cache, "example.com", "linked-target@v1.0.0"), filepath.Join(cache, "example.com", "linked@v1.0.0")))

	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n[sandbox]\nset_env = { GOPROXY = \"file:///proxy\" }\n")
	checkout := filepath.Join(filepath.Dir(cfg.Root), "widgets")
	must(t, os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module example.com/w\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(checkout, "go.sum"), []byte(strings.Join([]string{
		"example.com/ok v1.0.0 h1:x=",
		"../../etc v1.0.0 h1:x=",
		"example.com/../../x v1.0.0 h1:x=",
		"example.com/linked v1.0.0 h1:x=",
		"/abs/path v1.0.0 h1:x=",
		"example.com/ok ../v1 h1:x=",
		"example.com/ok v1.0.0",
		"example.com/ok v2.0.0 h1:x=", // a major version the path does not carry
	}, "\n")), 0o644))
	p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t, "GOMODCACHE="+cache), Options{})
	must(t, err)
	got := mountPaths(p, cache)
	want := []string{"cache/download/example.com/ok/@v/v1.0.0.info", "cache/download/example.com/ok/@v/v1.0.0.mod", "cache/download/example.com/ok/@v/v1.0.0.ziphash", "example.com/ok@v1.0.0"}
	if !slices.Equal(got, want) {
		t.Errorf("mounted:\n got %q\nwant %q", got, want)
	}
	for _, m := range p.Mounts {
		if within(outside, m.Path) || strings.Contains(m.Path, "..") {
			t.Errorf("mounted %s", m.Path)
		}
	}
	warned := strings.Join(p.Warnings, "\n")
	if !strings.Contains(warned, "6 lines name no valid module version") || !strings.Contains(warned, "example.com/linked@v1.0.0") {
		t.Errorf("warnings: %s", warned)
	}
	if v := envValue(p, "GOPROXY"); v != "file:///proxy" {
		t.Errorf("GOPROXY = %q, want set_env's", v)
	}
}

// TestGoSumWritableNotRead: a go.sum a sandbox could have written (the
// workspace is the module, and go.sum one of its writable paths) refuses
// the policy (the one rule of sources.go): it would choose which of the
// maintainer's modules the next run sees.
func TestGoSumWritableNotRead(t *testing.T) {
	cache := fakeModCache(t, t.TempDir(), "example.com/dep@v1.0.0")
	cfg := workspace(t, "[sandbox]\nwritable = [\"go.sum\"]\n")
	must(t, os.WriteFile(filepath.Join(cfg.Root, "go.mod"), []byte("module example.com/w\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(cfg.Root, "go.sum"), []byte("example.com/dep v1.0.0 h1:x=\n"), 0o644))
	p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t, "GOMODCACHE="+cache), Options{})
	if err == nil || !strings.Contains(err.Error(), "lies in the writable path go.sum") {
		t.Fatalf("err = %v, want the go.sum refused", err)
	}
	if p != nil {
		t.Errorf("a policy came back with the refusal: mounts %q", mountPaths(p, cache))
	}
}

// TestGoModCacheLocation: the cache is found as `go env GOMODCACHE` finds
// it, without running go.
func TestGoModCacheLocation(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{"go/pkg/mod", "gp/pkg/mod", "envfile/mod", "explicit"} {
		must(t, os.MkdirAll(filepath.Join(home, d), 0o755))
	}
	must(t, os.MkdirAll(filepath.Join(home, ".config", "go"), 0o755))
	tests := []struct {
		name, envFile string
		env           []string
		want          string
	}{
		{name: "default", want: "go/pkg/mod"},
		{name: "GOPATH", env: []string{"GOPATH=" + home + "/gp:/other"}, want: "gp/pkg/mod"},
		{name: "env file", envFile: "GOMODCACHE=" + home + "/envfile/mod\n", env: []string{"GOPATH=" + home + "/gp"}, want: "envfile/mod"},
		{name: "GOMODCACHE wins", envFile: "GOMODCACHE=" + home + "/envfile/mod\n", env: []string{"GOMODCACHE=" + home + "/explicit"}, want: "explicit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envFile := filepath.Join(home, ".config", "go", "env")
			_ = os.Remove(envFile)
			if tt.envFile != "" {
				must(t, os.WriteFile(envFile, []byte(tt.envFile), 0o644))
			}
			got, why, err := goModCache(Host{Home: home, Env: tt.env}, sandboxWritten{cfg: &config.File{}, inputs: new([]Input)})
			must(t, err)
			if got != filepath.Join(home, tt.want) {
				t.Errorf("got %q (%s), want %s", got, why, tt.want)
			}
		})
	}
}

// FuzzGoSumMounts: whatever go.sum says, every mount stays in the module
// cache, names no "..", and only a checked module version is mounted.
func FuzzGoSumMounts(f *testing.F) {
	f.Add("example.com/ok v1.0.0 h1:x=\nexample.com/ok v1.0.0/go.mod h1:y=\n")
	f.Add("../../etc v1.0.0 h1:x=\n")
	f.Add("example.com/../x v1.0.0 h1:x=\nexample.com/ok ../../v1 h1:x=\n")
	f.Add("Example.com/OK v1.0.0 h1:x=\nexample.com/ok/v2 v2.0.0+incompatible h1:x=\n")
	f.Add("example.com/ok v1.0.0\x00 h1:x=\n/abs v1.0.0 h1:x=\nexample.com/ok@v1.0.0 v1.0.0 h1:x=\n")
	cache := fakeModCache(f, f.TempDir(), "example.com/ok@v1.0.0", "example.com/!o!k@v1.0.0")
	f.Fuzz(func(t *testing.T, sum string) {
		versions, _ := parseGoSum([]byte(sum))
		ms, _ := moduleMounts(nil, cache, versions)
		for _, m := range ms {
			rel, err := filepath.Rel(cache, m.Path)
			if err != nil || !filepath.IsLocal(rel) || strings.Contains(m.Path, "/../") || !m.ReadOnly {
				t.Fatalf("mount %+v escapes the cache %s", m, cache)
			}
		}
	})
}
