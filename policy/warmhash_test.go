package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestWarmHashIgnoresListedEntries: a session (or pool) is kept by the
// policy's WarmHash, which does not change when files appear at the
// workspace root or in a writable path: the conflict file triage-sandbox
// itself writes beside NOTES.md used to end the session's sandbox, and
// its HOME with the warm caches. The root is a skeleton (NOTES.md and
// INDEX.md are writable files in it), so its listing was in the hash.
// A real change (the config, a credential path, a readable mount) still
// changes it.
func TestWarmHashIgnoresListedEntries(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	root := cfg.Root
	build := func(cfg *config.File) *Policy {
		t.Helper()
		p, err := Build(cfg, profiles.RoleAgent, fakeHost(t), Options{Session: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		makeWritable(t, p)
		return p
	}
	before := build(cfg)
	if !contains(before.Staging.Skeletons, before.WorkspaceRoot) {
		t.Fatalf("the workspace root %s is not a skeleton: %v (the test is moot)", before.WorkspaceRoot, before.Staging.Skeletons)
	}
	// What runs leave: a conflict file beside NOTES.md, files in the
	// writable paths, and what the maintainer drops at the root.
	for name, body := range map[string]string{
		"NOTES.md.from-sandbox-20261206T003000-1a2b3c": "the sandbox's version\n",
		"issues/34.md":   "an issue\n",
		"repros/r.py":    "print(1)\n",
		"scratch.txt":    "mine\n",
		"newdir/x.txt":   "x\n",
		".triage/x.json": "{}\n",
	} {
		full := filepath.Join(root, name)
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(body), 0o644))
	}
	must(t, os.Symlink("/etc/hostname", filepath.Join(root, "link")))
	after := build(cfg)
	if after.Hash() == before.Hash() {
		t.Errorf("the policy hash did not change although the root's listing did (the test is moot)")
	}
	if after.WarmHash() != before.WarmHash() {
		t.Errorf("WarmHash changed when files appeared at the root and in writable paths: %s → %s", before.WarmHash(), after.WarmHash())
	}

	cache := filepath.Join(filepath.Dir(root), "cache")
	must(t, os.Mkdir(cache, 0o755))
	changed := map[string]string{
		"a config edit":         "[project]\ncheckout = \"../widgets\"\n[sandbox]\nmemory = \"3g\"\n",
		"a new readable mount":  "[project]\ncheckout = \"../widgets\"\n[sandbox]\nread_only = [\"" + cache + "\"]\n",
		"a new credential path": "[project]\ncheckout = \"../widgets\"\n[sandbox]\nsecrets = [\"~/.ssh\", \"" + filepath.Join(root, "scratch.txt") + "\"]\n",
		"a gate rule":           "[project]\ncheckout = \"../widgets\"\n[sandbox]\ndeny = [\"gh issue close*\"]\n",
		"a new writable path":   "[project]\ncheckout = \"../widgets\"\n[sandbox.agent]\nwritable = [\"issues\", \"repros\", \"NOTES.md\", \"INDEX.md\", \".triage\", \"out\"]\n",
	}
	for name, body := range changed {
		t.Run(name, func(t *testing.T) {
			must(t, os.WriteFile(cfg.Path, []byte(body), 0o644))
			c, err := config.Load(cfg.Path)
			if err != nil {
				t.Fatal(err)
			}
			if got := build(c).WarmHash(); got == after.WarmHash() {
				t.Errorf("WarmHash unchanged after %s", name)
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestConfigWarningsReachThePolicy: what the config only warns about is
// shown where the policy's warnings are (run, doctor, the MCP result).
func TestConfigWarningsReachThePolicy(t *testing.T) {
	cfg := workspace(t, "[project]\nchekout = \"../widgets\"\n")
	p, err := Build(cfg, profiles.RoleAgent, fakeHost(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range p.Warnings {
		found = found || strings.Contains(w, `project.chekout: not a key triage-sandbox reads`) && strings.Contains(w, `did you mean "checkout"?`)
	}
	if !found {
		t.Errorf("warnings %q lack the typo", p.Warnings)
	}
}

// makeWritable makes p's writable paths exist, as the run's host
// preparation (package hostprep, which imports this one) would.
func makeWritable(t *testing.T, p *Policy) {
	t.Helper()
	for _, w := range p.HostPreparation() {
		if w.File {
			must(t, os.MkdirAll(filepath.Dir(w.Path), 0o755))
			f, err := os.OpenFile(w.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			must(t, err)
			must(t, f.Close())
			continue
		}
		must(t, os.MkdirAll(w.Path, 0o755))
	}
}
