package docker_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// fixture is a workspace with a checkout beside it, as ai-triager lays out.
type fixture struct {
	root, checkout string
	cfg            *config.File
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir is 0700 and owned by the test's uid; the sandbox identity
	// must be able to traverse it, as a real workspace's parents allow.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := fixture{root: filepath.Join(dir, "ws"), checkout: filepath.Join(dir, "widgets")}
	for _, d := range []string{f.root, f.checkout} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.checkout, "setup.py"), []byte("print('widgets')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(f.root, "triage.toml")
	body := "[project]\ncheckout = \"../widgets\"\n[repro]\ntimeout = 60\n[sandbox]\nnetwork = false\n"
	if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	f.cfg = cfg
	return f
}

type runOut struct {
	res            backends.Result
	stdout, stderr string
}

func run(t *testing.T, p *policy.Policy, timeout time.Duration, argv ...string) runOut {
	t.Helper()
	testenv.RequireDocker(t)
	b, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	res, err := sandbox.Run(context.Background(), b, sandbox.Request{
		Policy: p, Timeout: timeout, Command: backends.Command{Argv: argv},
		Streams: backends.Streams{Stdout: &stdout, Stderr: &stderr},
	})
	if err != nil {
		t.Fatalf("run %v: %v", argv, err)
	}
	assertGone(t, b.(*docker.Backend).Client(), res.Sandbox)
	return runOut{res.Result, stdout.String(), stderr.String()}
}

// assertGone checks the container no longer exists (AutoRemove or removal).
func assertGone(t *testing.T, cli *client.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s still exists after the run (err=%v)", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func build(t *testing.T, f fixture, role profiles.Role, host policy.Host) *policy.Policy {
	t.Helper()
	p, err := policy.Build(f.cfg, role, host, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func currentHost(t *testing.T, env ...string) policy.Host {
	t.Helper()
	h, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	h.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}, env...)
	h.Home = t.TempDir()
	return h
}

// A non-root caller's files come out owned by that caller; this exercises
// the ACL path when the workspace belongs to someone else.
func TestNonRootCallerOwnsItsFiles(t *testing.T) {
	testenv.RequireRoot(t, "to pretend to be another caller")
	f := newFixture(t)
	h := currentHost(t)
	h.UID, h.GID = 4242, 4242
	p := build(t, f, "reproducer", h)
	out := run(t, p, 0, "sh", "-c", "id -u; echo hi > repros/y")
	if out.res.ExitCode != 0 || strings.TrimSpace(strings.Split(out.stdout, "\n")[0]) != "4242" {
		t.Fatalf("exit %d out %q err %q", out.res.ExitCode, out.stdout, out.stderr)
	}
	fi, err := os.Stat(filepath.Join(f.root, "repros", "y"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 4242 {
		t.Errorf("owner %d, want 4242", uid)
	}
}
