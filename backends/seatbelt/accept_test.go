package seatbelt

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// Compile-time: the backend is a backends.Backend on every OS.
var _ backends.Backend = (*Backend)(nil)

// lacking is what role's policy from cfg needs that seatbelt does not
// enforce: exactly what the config must name in accept_weaker.
func lacking(t *testing.T, cfg *config.File, role profiles.Role, host policy.Host) []string {
	t.Helper()
	// Built as for a host-root backend that enforces everything, so it is
	// not refused and has seatbelt's readable base.
	all := slices.DeleteFunc(profiles.Capabilities(), func(c policy.Capability) bool { return c == profiles.CapImageRoot })
	p, err := policy.Build(cfg, role, host, policy.Options{Backend: Name, Capabilities: all})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range p.Requirements() {
		if !slices.Contains(Capabilities(), r) {
			out = append(out, string(r))
		}
	}
	return out
}

func acceptList(names []string) string { return `["` + strings.Join(names, `", "`) + `"]` }

// workspace makes a workspace with the role's outputs and a triage.toml
// holding extra, and returns its root.
func workspace(t *testing.T, extra string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "ws")
	for _, role := range profiles.Roles() {
		for _, w := range profiles.Writable(role) {
			if strings.HasSuffix(w, ".md") {
				mustWrite(t, filepath.Join(root, w), "")
			} else {
				mustMkdir(t, filepath.Join(root, w))
			}
		}
	}
	mustWrite(t, filepath.Join(root, "triage.toml"), extra)
	return root
}

// registry holds seatbelt alone: backends/builtin imports this package,
// so its tests here cannot import builtin.
func registry() *backends.Registry {
	r := backends.NewRegistry()
	r.Register(backends.Entry{Name: Name, Capabilities: Capabilities, New: New})
	return r
}

// TestPolicyRefusedUnlessAccepted: a default config is refused for seatbelt
// in one line naming each missing capability and the key that accepts it;
// accepting exactly those builds a policy that renders.
func TestPolicyRefusedUnlessAccepted(t *testing.T) {
	host, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range profiles.Roles() {
		root := workspace(t, "")
		host.Cwd = root
		cfg, err := config.Load(filepath.Join(root, "triage.toml"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = sandbox.Build(registry(), cfg, role, host, policy.Options{Backend: Name})
		if err == nil {
			t.Fatalf("%s: a policy seatbelt cannot enforce was built without accept_weaker", role)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "the seatbelt backend cannot enforce own_loopback") ||
			!strings.Contains(msg, "accept_weaker = [") || strings.Contains(msg, "host_root") || strings.Contains(msg, "mask_under_mount") {
			t.Errorf("%s: refusal %q: want one line naming what is missing and how to accept it", role, msg)
		}

		// The same config accepting exactly what is missing.
		missing := lacking(t, cfg, role, host)
		for _, m := range missing {
			if !strings.Contains(msg, m+" (") {
				t.Errorf("%s: the refusal does not name %s: %s", role, m, msg)
			}
		}
		accept := acceptList(missing)
		root = workspace(t, "[sandbox]\naccept_weaker = "+accept+"\n")
		host.Cwd = root
		if cfg, err = config.Load(filepath.Join(root, "triage.toml")); err != nil {
			t.Fatal(err)
		}
		p, err := sandbox.Build(registry(), cfg, role, host, policy.Options{Backend: Name})
		if err != nil {
			t.Fatalf("%s: accepting %s: %v", role, accept, err)
		}
		if p.Base.Kind != policy.BaseHost {
			t.Errorf("%s: base %q, want host roots", role, p.Base.Kind)
		}
		b, err := New(backends.Env{SelfExe: "/usr/local/bin/triage-sandbox"})
		if err != nil {
			t.Fatal(err)
		}
		art, err := b.Render(p, backends.Command{Argv: []string{"/bin/sh"}})
		if err != nil {
			t.Fatalf("%s: Render: %v", role, err)
		}
		if js, err := art.JSON(); err != nil || !strings.Contains(string(js), `"profile": "(version 1)`) {
			t.Errorf("%s: artifact %s, %v", role, js, err)
		}
	}
}

var (
	selfOnce sync.Once
	selfPath string
	selfErr  error
)

// buildSelf builds the triage-sandbox binary once per test run.
func buildSelf(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the triage-sandbox binary")
	}
	selfOnce.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			selfErr = err
			return
		}
		dir, err := os.MkdirTemp("", "triage-sandbox-seatbelt-test-")
		if err != nil {
			selfErr = err
			return
		}
		selfPath = filepath.Join(dir, "triage-sandbox")
		cmd := exec.Command("go", "build", "-o", selfPath, "./cmd/triage-sandbox")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			selfErr = &buildError{err, string(out)}
		}
	})
	if selfErr != nil {
		t.Fatalf("building triage-sandbox: %v", selfErr)
	}
	return selfPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// TestRenderCommand: `render --backend seatbelt --role R` prints the profile
// and its parameters on any OS, and refuses in one line without the
// accepted weaker modes.
func TestRenderCommand(t *testing.T) {
	self := buildSelf(t)
	for _, role := range profiles.Roles() {
		root := workspace(t, "")
		cmd := exec.Command(self, "render", "--backend", Name, "--role", string(role))
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 125 {
			t.Fatalf("%s without accept_weaker: %v, %s; want exit 125", role, err, out)
		}
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "accept_weaker") {
			t.Errorf("%s: refusal %q: want one line naming accept_weaker", role, out)
		}
		host, err := policy.CurrentHost()
		if err != nil {
			t.Fatal(err)
		}
		host.Cwd = root
		cfg, err := config.Load(filepath.Join(root, "triage.toml"))
		if err != nil {
			t.Fatal(err)
		}
		accept := acceptList(lacking(t, cfg, role, host))
		mustWrite(t, filepath.Join(root, "triage.toml"), "[sandbox]\naccept_weaker = "+accept+"\n")
		cmd = exec.Command(self, "render", "--backend", Name, "--role", string(role))
		cmd.Dir = root
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s with accept_weaker = %s: %v", role, accept, err)
		}
		var art Artifact
		if err := json.Unmarshal(stdout, &art); err != nil {
			t.Fatalf("%s: output is not the artifact: %v\n%s", role, err, stdout)
		}
		if art.SandboxExec != SandboxExec || !strings.HasPrefix(art.Profile, "(version 1)\n") || len(art.Params) == 0 || art.Argv[0] != SandboxExec {
			t.Errorf("%s: artifact %+v", role, art)
		}
		if runtime.GOOS != "darwin" && !strings.Contains(art.Profile, "(deny default") {
			t.Errorf("%s: profile without (deny default)", role)
		}
	}
}
