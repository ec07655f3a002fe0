package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// buildPolicy compiles the default config for a workspace with the given
// outputs, for this backend's capabilities.
func buildPolicy(t *testing.T, role profiles.Role, mutate func(*policy.Policy)) *policy.Policy {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"repros", "issues", ".triage"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"NOTES.md", "INDEX.md"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host := policy.Host{Home: t.TempDir(), UID: 0, GID: 0, OS: "linux", Cwd: root, Env: []string{"PATH=/usr/bin:/bin"}}
	caps := append(Capabilities(), "memory_limit", "pids_limit", "cpu_limit", "uid_switch")
	p, err := policy.Build(config.Default(root), role, host, policy.Options{Backend: Name, Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestPlanTranslatesThePolicy(t *testing.T) {
	p := buildPolicy(t, "agent", nil)
	pl, err := Plan(p, "/opt/triage-sandbox")
	if err != nil {
		t.Fatal(err)
	}
	binds := map[string]bool{} // dest → writable
	for _, b := range pl.Binds {
		binds[b.Dest()] = b.Write
	}
	tmpfs := map[string]bool{}
	for _, m := range pl.Tmpfs {
		tmpfs[m.Target] = true
		if m.UID != p.User.UID || m.Size <= 0 || m.Inodes <= 0 {
			t.Errorf("tmpfs %s: owner %d, size %d, inodes %d: want the sandbox identity and bounds", m.Target, m.UID, m.Size, m.Inodes)
		}
	}
	// The root holds writable files (NOTES.md), so it is a staged skeleton:
	// a bounded tmpfs with the root's other entries bound read-only in it.
	if !slices.Contains(p.Staging.Skeletons, p.WorkspaceRoot) || !tmpfs[p.WorkspaceRoot] {
		t.Errorf("the workspace root is not a staged skeleton")
	}
	if w, ok := binds[filepath.Join(p.WorkspaceRoot, "triage.toml")]; ok && w {
		t.Errorf("an entry of the skeleton is bound writable")
	}
	if w, ok := binds[launch.InitPath]; !ok || w {
		t.Errorf("the binary is not bound read-only at %s", launch.InitPath)
	}
	for _, out := range []string{"repros", "issues", ".triage"} {
		path := filepath.Join(p.WorkspaceRoot, out)
		if !tmpfs[path] {
			t.Errorf("staged output %s is not a bounded tmpfs", path)
		}
		if _, bound := binds[path]; bound {
			t.Errorf("staged output %s is also bound from the host", path)
		}
		if !slices.Contains(pl.Landlock.ReadWrite, path) {
			t.Errorf("Landlock does not grant writes to %s", path)
		}
	}
	for _, s := range []string{ScratchPaths.Home, ScratchPaths.Tmp} {
		if !tmpfs[s] {
			t.Errorf("scratch %s is not a tmpfs", s)
		}
	}
	for _, r := range p.Base.HostRoots {
		if target, err := os.Readlink(r); err == nil {
			if !slices.Contains(pl.Symlinks, confineSymlink(r, target)) {
				t.Errorf("host root %s (a symlink) is not recreated as one", r)
			}
			continue
		}
		if w, ok := binds[r]; !ok || w {
			t.Errorf("host root %s is not bound read-only", r)
		}
	}
	for _, m := range p.Masked {
		if !slices.ContainsFunc(pl.Masks, func(x maskT) bool { return x.Path == m }) {
			t.Errorf("credential path %s is not masked", m)
		}
	}
	if pl.Landlock.MinABI != MinLandlockABI || pl.Seccomp.Set == "" || pl.UID != p.User.UID {
		t.Errorf("plan: landlock %d, seccomp %q, uid %d", pl.Landlock.MinABI, pl.Seccomp.Set, pl.UID)
	}
	for _, w := range pl.Landlock.ReadWrite {
		if w == "/" || slices.Contains(p.Base.HostRoots, w) {
			t.Errorf("Landlock grants writes to %s", w)
		}
	}
}

func TestPlanRefuses(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*policy.Policy)
		want   string
	}{
		{"an image base", func(p *policy.Policy) { p.Base = policy.Base{Kind: policy.BaseImage, Image: "x"} }, "host roots"},
		{"a route out", func(p *policy.Policy) { p.Network.Mode = policy.NetworkOutbound }, "own loopback"},
		{"allow_all", func(p *policy.Policy) { p.AllowAll = true }, "unconfined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Plan(buildPolicy(t, "reproducer", tt.mutate), "/opt/triage-sandbox")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

type maskT = confineMask

func confineSymlink(path, target string) confineSym { return confineSym{Path: path, Target: target} }

// TestPlanDiscardsTheCheckout: the project checkout is bound read-only with
// a bounded upper layer whose writes are discarded (the helper's overlay),
// and Landlock lets the sandbox write there; with checkout_writes =
// "refuse" it is a plain read-only bind.
func TestPlanDiscardsTheCheckout(t *testing.T) {
	for _, discard := range []bool{true, false} {
		checkout := t.TempDir()
		p := buildPolicy(t, "reproducer", func(p *policy.Policy) {
			p.Mounts = append(p.Mounts, policy.Mount{Path: checkout, ReadOnly: true, Kind: "dir", Discard: discard, Why: "project checkout"})
		})
		pl, err := Plan(p, "/opt/triage-sandbox")
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(pl.Binds, func(b confineBind) bool { return b.Source == checkout })
		if i < 0 {
			t.Fatalf("discard %v: the checkout is not bound", discard)
		}
		b := pl.Binds[i]
		writable := slices.Contains(pl.Landlock.ReadWrite, checkout)
		switch {
		case b.Write:
			t.Errorf("discard %v: the checkout is bound writable from the host", discard)
		case discard && (b.Discard == nil || b.Discard.Size != p.Limits.WritableSize || b.Discard.Inodes != p.Limits.WritableInodes || !writable):
			t.Errorf("the checkout's upper layer %+v (Landlock writable %v), want %d bytes, %d inodes, writable", b.Discard, writable, p.Limits.WritableSize, p.Limits.WritableInodes)
		case !discard && (b.Discard != nil || writable):
			t.Errorf("checkout_writes = refuse: upper layer %+v, Landlock writable %v", b.Discard, writable)
		}
	}
}

// TestPlanSystemPython is issue 34's #6: with [project] python the
// system's interpreter (as the README recommends) or a venv made from it,
// the python environment brought /usr as a mount beside the host root
// /usr, and every plan was refused ("binds[2].target: "/usr" is also the
// target of binds[0].target", exit 125). The venv is a real one.
func TestPlanSystemPython(t *testing.T) {
	const system = "/usr/bin/python3"
	if _, err := os.Stat(system); err != nil {
		t.Skipf("no %s here: %v", system, err)
	}
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(system, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("%s -m venv: %v: %s", system, err, out)
	}
	for _, py := range []string{system, filepath.Join(venv, "bin", "python3")} {
		t.Run(py, func(t *testing.T) {
			root := t.TempDir()
			cfg := config.Default(root)
			cfg.Project.Python = py
			host := policy.Host{Home: t.TempDir(), UID: 1000, GID: 1000, OS: "linux", Cwd: root, Env: []string{"PATH=/usr/bin:/bin"}}
			caps := append(Capabilities(), "memory_limit", "pids_limit", "cpu_limit", "uid_switch")
			p, err := policy.Build(cfg, "reproducer", host, policy.Options{Backend: Name, Capabilities: caps})
			if err != nil {
				t.Fatal(err)
			}
			pl, err := Plan(p, "/opt/triage-sandbox")
			if err != nil {
				t.Fatalf("the plan is refused: %v", err)
			}
			n := 0
			for _, b := range pl.Binds {
				if b.Dest() == "/usr" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("/usr is bound %d times: %+v", n, pl.Binds)
			}
		})
	}
}
