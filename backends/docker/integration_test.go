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

func build(t *testing.T, f fixture, role string, host policy.Host) *policy.Policy {
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

func TestReproducerWritesOnlyItsPaths(t *testing.T) {
	f := newFixture(t)
	p := build(t, f, "reproducer", currentHost(t))
	script := `
echo repro > repros/x && echo "repros ok"
echo x > triage.toml.new 2>/dev/null && echo "root WRITABLE"
echo x > ` + f.checkout + `/evil 2>/dev/null && echo "checkout WRITABLE"
echo x > /etc/evil 2>/dev/null && echo "etc WRITABLE"
echo x > /usr/evil 2>/dev/null && echo "usr WRITABLE"
echo x > "$HOME/scratch" && echo "home scratch ok"
echo x > "$TMPDIR/scratch" && echo "tmp scratch ok"
exit 0`
	out := run(t, p, 0, "sh", "-c", script)
	if out.res.ExitCode != 0 {
		t.Fatalf("exit %d: %s %s", out.res.ExitCode, out.stdout, out.stderr)
	}
	for _, want := range []string{"repros ok", "home scratch ok", "tmp scratch ok"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("missing %q in %q", want, out.stdout)
		}
	}
	if strings.Contains(out.stdout, "WRITABLE") {
		t.Errorf("wrote outside the writable paths: %q", out.stdout)
	}
	for _, p := range []string{filepath.Join(f.root, "triage.toml.new"), filepath.Join(f.checkout, "evil")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
	// The file is on the host, owned by the sandbox identity, and usable by
	// the invoking user: read it, append to it, remove it.
	x := filepath.Join(f.root, "repros", "x")
	fi, err := os.Stat(x)
	if err != nil {
		t.Fatal(err)
	}
	if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid != p.User.UID {
		t.Errorf("repros/x owned by %d, want %d", uid, p.User.UID)
	}
	fh, err := os.OpenFile(x, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("invoking user cannot open repros/x: %v", err)
	}
	_, _ = fh.WriteString("more\n")
	fh.Close()
	if err := os.Remove(x); err != nil {
		t.Fatalf("invoking user cannot remove repros/x: %v", err)
	}
}

// A non-root caller's files come out owned by that caller; this exercises
// the ACL path when the workspace belongs to someone else.
func TestNonRootCallerOwnsItsFiles(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to pretend to be another caller")
	}
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

func TestCanaryEnvironmentNotVisible(t *testing.T) {
	f := newFixture(t)
	canaries := []string{
		"GITHUB_TOKEN=canary-gh-5f1e", "ANTHROPIC_API_KEY=canary-ant-77aa",
		"TRIAGE_GITHUB_TOKEN=canary-triage-9c2d", "AWS_SECRET_ACCESS_KEY=canary-aws-0b3f",
	}
	for _, role := range []string{"agent", "reproducer"} {
		t.Run(role, func(t *testing.T) {
			p := build(t, f, role, currentHost(t, append([]string{"TRIAGE_ISSUE=42"}, canaries...)...))
			out := run(t, p, 0, "sh", "-c", "env; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'")
			if strings.Contains(out.stdout, "canary") {
				t.Errorf("canary visible:\n%s", out.stdout)
			}
			if role == "reproducer" && !strings.Contains(out.stdout, "TRIAGE_ISSUE=42") {
				t.Errorf("allowed TRIAGE_ISSUE missing (the check could not fail otherwise):\n%s", out.stdout)
			}
		})
	}
}

func TestOnlyLoopbackNoCapsNonRoot(t *testing.T) {
	f := newFixture(t)
	for _, role := range []string{"agent", "reproducer"} {
		t.Run(role, func(t *testing.T) {
			p := build(t, f, role, currentHost(t))
			out := run(t, p, 0, "sh", "-c", "ls /sys/class/net; grep -E '^(Uid|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status")
			if out.res.ExitCode != 0 {
				t.Fatalf("exit %d: %s", out.res.ExitCode, out.stderr)
			}
			fields := map[string]string{}
			var ifaces []string
			for _, line := range strings.Split(strings.TrimSpace(out.stdout), "\n") {
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					ifaces = append(ifaces, line)
					continue
				}
				fields[k] = strings.TrimSpace(v)
			}
			if strings.Join(ifaces, ",") != "lo" {
				t.Errorf("interfaces = %v, want only lo", ifaces)
			}
			if uid := strings.Fields(fields["Uid"]); len(uid) == 0 || uid[0] == "0" {
				t.Errorf("uid = %q", fields["Uid"])
			}
			for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if fields[c] != "0000000000000000" {
					t.Errorf("%s = %q, want none", c, fields[c])
				}
			}
			if fields["NoNewPrivs"] != "1" || fields["Seccomp"] != "2" {
				t.Errorf("NoNewPrivs=%q Seccomp=%q", fields["NoNewPrivs"], fields["Seccomp"])
			}
		})
	}
}

func TestPythonOneLiner(t *testing.T) {
	f := newFixture(t)
	p := build(t, f, "reproducer", currentHost(t))
	out := run(t, p, 0, "python3", "-c", "import sys; print(sum(range(10)), sys.version_info[0])")
	if out.res.ExitCode != 0 || strings.TrimSpace(out.stdout) != "45 3" {
		t.Fatalf("exit %d out %q err %q", out.res.ExitCode, out.stdout, out.stderr)
	}
}

func TestExitCodes(t *testing.T) {
	f := newFixture(t)
	p := build(t, f, "agent", currentHost(t))
	tests := []struct {
		name     string
		argv     []string
		timeout  time.Duration
		wantCode int
		timedOut bool
	}{
		{"own code", []string{"sh", "-c", "exit 3"}, 0, 3, false},
		{"not found", []string{"no-such-command"}, 0, 127, false},
		{"not executable", []string{f.checkout + "/setup.py"}, 0, 126, false},
		{"signal", []string{"sh", "-c", "kill -TERM $$"}, 0, 143, false},
		{"timeout kills the tree", []string{"sh", "-c", "sleep 300 & setsid sh -c 'trap \"\" TERM; sleep 300' & wait"}, 2 * time.Second, 124, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out := run(t, p, tt.timeout, tt.argv...)
			if got := sandbox.ExitCode(out.res); got != tt.wantCode {
				t.Errorf("exit = %d, want %d (stderr %q)", got, tt.wantCode, out.stderr)
			}
			if out.res.TimedOut != tt.timedOut {
				t.Errorf("timed out = %v", out.res.TimedOut)
			}
			if tt.timedOut && time.Since(start) > tt.timeout+15*time.Second {
				t.Errorf("took %s to stop after a %s timeout", time.Since(start), tt.timeout)
			}
		})
	}
}

// TestTimeoutToGone measures how long after the deadline the sandbox is
// gone, for a command that obeys SIGTERM and one that ignores it.
func TestTimeoutToGone(t *testing.T) {
	f := newFixture(t)
	p := build(t, f, "agent", currentHost(t))
	for _, tt := range []struct{ name, script string }{
		{"obeys SIGTERM", "sleep 60"},
		{"ignores SIGTERM", "trap '' TERM; sleep 60 & setsid sleep 61 & wait"},
	} {
		start := time.Now()
		out := run(t, p, time.Second, "sh", "-c", tt.script) // returns once the container is gone
		if !out.res.TimedOut {
			t.Fatalf("%s: not timed out", tt.name)
		}
		// Duration runs from the container's start, so Duration - timeout is
		// the deadline-to-dead time; removal follows before run returns.
		killed := out.res.Duration - time.Second
		t.Logf("%s: dead %v after the deadline; whole run incl. create/start/remove %v",
			tt.name, killed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		if killed > 5*time.Second {
			t.Errorf("%s: %v from deadline to dead", tt.name, killed)
		}
	}
}
