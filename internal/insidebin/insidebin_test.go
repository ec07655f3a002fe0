package insidebin

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func info(mod func(*debug.BuildInfo)) *debug.BuildInfo {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Path:      "example.com/m/cmd/a",
		Main:      debug.Module{Path: "example.com/m", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "golang.org/x/sys", Version: "v0.49.0", Sum: "h1:sys"},
			{Path: "github.com/moby/moby/client", Version: "v0.1.0", Sum: "h1:moby"},
		},
		Settings: []debug.BuildSetting{
			{Key: "CGO_ENABLED", Value: "0"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"},
		},
	}
	if mod != nil {
		mod(bi)
	}
	return bi
}

func set(bi *debug.BuildInfo, k, v string) {
	for i := range bi.Settings {
		if bi.Settings[i].Key == k {
			bi.Settings[i].Value = v
			return
		}
	}
	bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
}

func TestSameSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    func(*debug.BuildInfo)
		a    func(*debug.BuildInfo)
		want string // "" = same; else a part of the reason
	}{
		{name: "same, the other main package and fewer deps", b: func(bi *debug.BuildInfo) {
			bi.Path = "example.com/m/cmd/b"
			bi.Deps = bi.Deps[:1]
		}},
		{name: "go version", b: func(bi *debug.BuildInfo) { bi.GoVersion = "go1.26.7" }, want: "Go go1.26.8 and go1.26.7"},
		{name: "main module", b: func(bi *debug.BuildInfo) { bi.Main.Path = "example.com/fork" }, want: "main module"},
		{name: "dirty", b: func(bi *debug.BuildInfo) { set(bi, "vcs.modified", "true") }, want: "modified tree"},
		{name: "dirty CLI", a: func(bi *debug.BuildInfo) { set(bi, "vcs.modified", "true") }, want: "modified tree"},
		{name: "no vcs", a: func(bi *debug.BuildInfo) { bi.Settings = bi.Settings[:3] }, b: func(bi *debug.BuildInfo) { bi.Settings = bi.Settings[:3] }, want: "no VCS revision"},
		{name: "other revision", b: func(bi *debug.BuildInfo) { set(bi, "vcs.revision", "abd") }, want: "vcs.revision"},
		{name: "cgo", b: func(bi *debug.BuildInfo) { set(bi, "CGO_ENABLED", "1") }, want: "CGO_ENABLED"},
		{name: "tags", b: func(bi *debug.BuildInfo) { set(bi, "-tags", "kubernetes") }, want: "-tags"},
		{name: "arch", b: func(bi *debug.BuildInfo) { set(bi, "GOARCH", "arm64") }, want: "GOARCH"},
		{name: "dep version", b: func(bi *debug.BuildInfo) {
			bi.Deps[0] = &debug.Module{Path: "golang.org/x/sys", Version: "v0.48.0", Sum: "h1:old"}
		}, want: "golang.org/x/sys"},
		{name: "dep sum", b: func(bi *debug.BuildInfo) {
			bi.Deps[0] = &debug.Module{Path: "golang.org/x/sys", Version: "v0.49.0", Sum: "h1:other"}
		}, want: "golang.org/x/sys"},
		{name: "dep replaced by a directory", b: func(bi *debug.BuildInfo) {
			bi.Deps[0] = &debug.Module{Path: "golang.org/x/sys", Version: "v0.49.0", Sum: "h1:sys", Replace: &debug.Module{Path: "../sys"}}
		}, a: func(bi *debug.BuildInfo) {
			bi.Deps[0] = &debug.Module{Path: "golang.org/x/sys", Version: "v0.49.0", Sum: "h1:sys", Replace: &debug.Module{Path: "../sys"}}
		}, want: "replaced"},
		{name: "released module, no vcs", a: func(bi *debug.BuildInfo) {
			bi.Main.Version, bi.Main.Sum, bi.Settings = "v1.2.3", "h1:main", bi.Settings[:3]
		}, b: func(bi *debug.BuildInfo) {
			bi.Main.Version, bi.Main.Sum, bi.Settings = "v1.2.3", "h1:main", bi.Settings[:3]
		}},
		{name: "released module, other sum", a: func(bi *debug.BuildInfo) {
			bi.Main.Version, bi.Main.Sum = "v1.2.3", "h1:main"
		}, b: func(bi *debug.BuildInfo) {
			bi.Main.Version, bi.Main.Sum = "v1.2.3", "h1:forged"
		}, want: "main module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sameSource(info(tc.a), info(tc.b))
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("sameSource = %q, want %q", got, tc.want)
			}
		})
	}
}

// repo makes a git checkout of a module with two main packages, like this
// one's CLI and in-sandbox binary, committed clean.
func repo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to stamp builds with a revision")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":        "module example.com/m\n\ngo 1.22\n",
		"cli/main.go":   "package main\n\nfunc main() { println(\"cli\") }\n",
		"inner/main.go": "package main\n\nfunc main() { println(\"inner\") }\n",
		".gitignore":    "/bin/\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "x")
	return dir
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// build builds pkg of the module at dir to bin/name, static and stamped
// (unless a flag says otherwise).
func build(t *testing.T, dir, pkg, name string, flags ...string) string {
	t.Helper()
	out := filepath.Join(dir, "bin", name)
	cmd := exec.Command("go", append(append([]string{"build", "-buildvcs=auto"}, flags...), "-o", out, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func noEnv(string) string { return "" }

// TestChooseRealBuilds: real binaries of one module, beside each other,
// through the whole choice: the clean pair is chosen; a dirty tree's, an
// unstamped one, a group-writable one and a missing one fall back to the
// CLI's binary; an explicit setting that cannot be used is refused.
func TestChooseRealBuilds(t *testing.T) {
	dir := repo(t)
	cli := build(t, dir, "./cli", "cli")
	cliInfo, err := buildinfo.ReadFile(cli)
	if err != nil {
		t.Fatal(err)
	}
	inner := build(t, dir, "./inner", Name)

	c, err := Choose(cli, cliInfo, noEnv)
	if err != nil || !c.Separate || c.Path != inner {
		t.Fatalf("clean pair: Choose = %+v, %v; want %s, separate", c, err, inner)
	}
	explicit := func(p string) func(string) string {
		return func(k string) string {
			if k == EnvVar {
				return p
			}
			return ""
		}
	}
	if c, err := Choose(cli, cliInfo, explicit(inner)); err != nil || !c.Separate {
		t.Fatalf("explicit clean: Choose = %+v, %v", c, err)
	}

	fallsBack := func(t *testing.T, getenv func(string) string, why string) {
		t.Helper()
		c, err := Choose(cli, cliInfo, getenv)
		if err != nil || c.Separate || c.Path != cli || !strings.Contains(c.Why, why) {
			t.Fatalf("Choose = %+v, %v; want the CLI's binary %s, because %q", c, err, cli, why)
		}
	}
	refused := func(t *testing.T, getenv func(string) string, why string) {
		t.Helper()
		c, err := Choose(cli, cliInfo, getenv)
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), EnvVar) {
			t.Fatalf("Choose = %+v, %v; want refused: %q", c, err, why)
		}
	}

	t.Run("dirty tree", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(dir, "inner", "main.go"), []byte("package main\n\nfunc main() { println(\"changed\") }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer git(t, dir, "checkout", "-q", "--", "inner/main.go")
		dirty := build(t, dir, "./inner", "dirty")
		fallsBack(t, explicit(dirty), "modified tree")
	})
	t.Run("unstamped", func(t *testing.T) {
		plain := build(t, dir, "./inner", "plain", "-buildvcs=false")
		fallsBack(t, explicit(plain), "no VCS revision")
	})
	t.Run("another revision", func(t *testing.T) {
		git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "y")
		later := build(t, dir, "./inner", "later")
		fallsBack(t, explicit(later), "vcs.revision")
	})
	t.Run("group-writable, found beside", func(t *testing.T) {
		if err := os.Chmod(inner, 0o775); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(inner, 0o755)
		fallsBack(t, noEnv, "writable by group or others")
		refused(t, explicit(inner), "writable by group or others")
	})
	t.Run("missing", func(t *testing.T) {
		moved := inner + ".moved"
		if err := os.Rename(inner, moved); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(moved, inner)
		fallsBack(t, noEnv, "no "+Name)
		refused(t, explicit(inner), "no "+Name)
	})
	t.Run("dynamic", func(t *testing.T) {
		sh, err := filepath.EvalSymlinks("/bin/sh")
		if err != nil {
			t.Fatal(err)
		}
		if static, err := Static(sh); err != nil || static {
			t.Fatalf("%s: static %v, %v: this test needs a dynamically linked binary", sh, static, err)
		}
		refused(t, explicit(sh), "dynamically linked")
	})
}
