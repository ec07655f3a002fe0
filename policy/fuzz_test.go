package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// FuzzBuild feeds the builder arbitrary writable paths, env patterns and
// caller variables. It must never panic; an error is clear text; a policy
// never lets a writable path out of the root, never runs as root and never
// passes a credential-looking variable through a wildcard.
func FuzzBuild(f *testing.F) {
	f.Add("repros", "PIXI_*", "GITHUB_TOKEN", "x", "reproducer")
	f.Add("../x", "*", "TRIAGE_GITHUB_TOKEN", "secret", "agent")
	f.Add("a/../../b", "[", "TOKENIZER_DIR", "/t", "reproducer")
	f.Add("NOTES.md", "LC_*", "LC_ALL", "C", "agent")
	f.Add("/etc", "AWS_*", "AWS_SECRET_ACCESS_KEY", "k", "agent")
	f.Add("", "", "", "", "reproducer")
	f.Add("repros", "", "TRIAGE_APITOKEN", "x", "reproducer")
	f.Add("repros", "PIXI_*", "TRIAGE_RUN_ID", "ghp_R2d9xQ7mPz4LkT8vNw3yB6cJ1hF5sGa0eU2i", "reproducer")
	f.Add("repros", "", "TRIAGE_HOOK", "https://u:p@h/x", "reproducer")
	root := f.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "ws"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "ws", "link")); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, writable, pattern, name, value, roleName string) {
		role := profiles.RoleReproducer
		if profiles.Role(roleName) == profiles.RoleAgent {
			role = profiles.RoleAgent
		}
		cfg := config.Default(filepath.Join(root, "ws"))
		cfg.Sandbox.Writable = []string{writable}
		cfg.Sandbox.Env = []string{pattern}
		host := Host{Home: "/home/u", OS: "linux", UID: 1000, GID: 1000, Env: []string{name + "=" + value, "PATH=/bin"}}
		p, err := Build(cfg, role, host, Options{})
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.TrimSpace(line) == "" {
					t.Fatalf("blank line in error %q", err)
				}
			}
			return
		}
		if p.User.UID == 0 {
			t.Fatal("uid 0 inside")
		}
		for _, m := range p.Mounts {
			if !m.ReadOnly && !within(p.WorkspaceRoot, m.Path) {
				t.Fatalf("writable %s outside the root %s", m.Path, p.WorkspaceRoot)
			}
			if !m.ReadOnly && strings.HasPrefix(m.Path, filepath.Join(root, "ws", "link")) {
				t.Fatalf("writable through a symlink: %s", m.Path)
			}
		}
		secret, _ := profiles.LooksLikeSecretValue(value)
		secret = secret && !slices.Contains(profiles.EnvAllow(role), name)
		if cred, _ := profiles.LooksLikeCredential(name); (cred || secret) && name != pattern {
			for _, e := range p.Env {
				if e.Name == name {
					t.Fatalf("credential-looking %s passed via pattern %q", name, pattern)
				}
			}
		}
	})
}
