package seatbelt

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/sbpl"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestRenderSuite runs the render-only part of backendtest's Suite on
// every OS: each role's policy, built by policy.Build for seatbelt from a
// triage.toml, rendered by the backend as `render` does, and the profile
// read by the SBPL evaluator under every reported precedence: each
// writable path takes writes, each mount reads, read-only directories and
// the workspace root take no new file, credentials neither read nor take
// writes. (The live Suite runs where sandbox-exec does: macOS.)
func TestRenderSuite(t *testing.T) {
	b, err := New(backends.Env{SelfExe: "/usr/local/bin/triage-sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	backendtest.RenderSuite(t, backendtest.RenderHarness{Backend: b, Policies: suitePolicies, Allows: evaluate})
}

// suitePolicies are both roles' policies of one workspace in the caller's
// home, with a checkout beside it and credentials in the home.
func suitePolicies(t testing.TB) map[string]*policy.Policy {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	root := filepath.Join(home, "work")
	checkout := filepath.Join(base, "widgets")
	for _, d := range []string{root, checkout + "/.git", home + "/.ssh", home + "/.config/gh"} {
		mkdirTB(t, d)
	}
	writeTB(t, home+"/.ssh/id_ed25519", "canary")
	writeTB(t, checkout+"/README.md", "readme")
	cfgPath := filepath.Join(root, "triage.toml")
	writeTB(t, cfgPath, "[project]\ncheckout = "+quoteTOML(checkout)+"\n\n[sandbox]\naccept_weaker = "+acceptTOML()+"\n")
	out := map[string]*policy.Policy{}
	for _, role := range profiles.Roles() {
		for _, w := range profiles.Writable(role) {
			if filepath.Ext(w) == ".md" {
				writeTB(t, filepath.Join(root, w), "")
			} else {
				mkdirTB(t, filepath.Join(root, w))
			}
		}
		cfg, err := config.Load(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		host := policy.Host{Home: home, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + home},
			OS: runtime.GOOS, UID: 501, GID: 20, Cwd: root}
		p, err := policy.Build(cfg, role, host, policy.Options{Backend: Name, Capabilities: Capabilities()})
		if err != nil {
			t.Fatalf("policy.Build(%s): %v", role, err)
		}
		out[string(role)] = p
	}
	return out
}

// accessOps are the SBPL operations each of the Suite's accesses is.
var accessOps = map[backendtest.Access][]string{
	backendtest.Read:  {"file-read-data"},
	backendtest.Write: {"file-write-create", "file-write-data"},
}

// evaluate is what the rendered profile allows, by the SBPL evaluator: an
// access is allowed when each of its operations is, under every reading
// of Seatbelt's precedence (semantics), and denied when none is; readings
// that disagree are an error.
func evaluate(a backends.Artifact, access backendtest.Access, path string) (bool, error) {
	art, ok := a.(*Artifact)
	if !ok {
		return false, fmt.Errorf("not a seatbelt artifact: %T", a)
	}
	prof, err := sbpl.Compile(art.Profile, art.Params)
	if err != nil {
		return false, fmt.Errorf("the evaluator refuses the profile: %w", err)
	}
	c, err := HostResolver().Canonical(path)
	if err != nil {
		// A name under a file (a credential file's "id_rsa"): its parent's
		// spelling, as the kernel would resolve the parent.
		if c, err = HostResolver().Canonical(filepath.Dir(path)); err != nil {
			return false, err
		}
		c = filepath.Join(c, filepath.Base(path))
	}
	var allowed, denied int
	for _, s := range semantics {
		for _, op := range accessOps[access] {
			d, err := prof.Decide(sbpl.Request{Op: op, Path: c}, s.opts)
			if err != nil {
				return false, err
			}
			if d.Allow {
				allowed++
			} else {
				denied++
			}
		}
	}
	if allowed > 0 && denied > 0 {
		return false, fmt.Errorf("%s %s: the precedence readings disagree (%d allow, %d deny)", access, c, allowed, denied)
	}
	return allowed > 0, nil
}

func mkdirTB(t testing.TB, d string) {
	t.Helper()
	if err := osMkdirAll(d); err != nil {
		t.Fatal(err)
	}
}

func writeTB(t testing.TB, p, body string) {
	t.Helper()
	mkdirTB(t, filepath.Dir(p))
	if err := osWriteFile(p, body); err != nil {
		t.Fatal(err)
	}
}

func osMkdirAll(d string) error        { return os.MkdirAll(d, 0o755) }
func osWriteFile(p, body string) error { return os.WriteFile(p, []byte(body), 0o644) }
