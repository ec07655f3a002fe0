//go:build unix

package seatbelt

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// fakeSandboxExec stands in for sandbox-exec where there is none: it checks
// that the profile it is given is a private file holding what was rendered
// and that every parameter is passed, records them, then runs the command
// unconfined. What it proves is the runner: the helper, the scratch, exit
// codes and timeouts, the clean-up.
const fakeSandboxExec = `#!/bin/sh
profile=
params=0
while [ $# -gt 0 ]; do
  case "$1" in
    -f) profile=$2; shift 2 ;;
    -D) params=$((params + 1)); shift 2 ;;
    --) shift; break ;;
    *) echo "fake sandbox-exec: unexpected $1" >&2; exit 64 ;;
  esac
done
mode=$(stat -c %a "$profile" 2>/dev/null || stat -f %Lp "$profile")
[ "$mode" = 600 ] || { echo "fake sandbox-exec: profile mode $mode" >&2; exit 65; }
head -1 "$profile" | grep -q '^(version 1)$' || { echo "fake sandbox-exec: not a profile" >&2; exit 65; }
echo "$profile $params" >> "$SEATBELT_FAKE_LOG"
exec "$@"
`

var helperOnce sync.Once

// runnerRig starts a box with the fake sandbox-exec and the test helper.
func runnerRig(t *testing.T) (*box, string) {
	t.Helper()
	s, log, err := runnerRigFor(t, nil)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s, log
}

// runnerRigFor is runnerRig for the policy edit makes, returning Start's
// error.
func runnerRigFor(t *testing.T, edit func(p *policy.Policy)) (*box, string, error) {
	t.Helper()
	testenv.SkipShort(t, "builds the exec helper with go build")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "sandbox-exec")
	mustWrite(t, fake, fakeSandboxExec)
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(dir, "helper")
	build := exec.Command("go", "build", "-o", self, "./testdata/exechelper")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the helper: %v: %s", err, out)
	}
	root := filepath.Join(dir, "ws")
	home := filepath.Join(dir, "home")
	mustMkdir(t, filepath.Join(root, "repros"))
	p := handPolicy(profiles.RoleReproducer, home, root, filepath.Join(dir, "checkout"), policy.NetworkLoopback)
	log := filepath.Join(dir, "calls.log")
	p.Env = append(p.Env, policy.EnvVar{Name: "SEATBELT_FAKE_LOG", Value: log}, policy.EnvVar{Name: "PATH", Value: "/usr/bin:/bin"})
	b, err := NewWithOptions(backends.Env{SelfExe: self}, Options{StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(p)
	}
	ports := func(context.Context) ([]int, error) { return []int{5432}, nil }
	s, err := b.startBox(context.Background(), p, backends.StartOptions{}, hostOps{sandboxExec: fake, ports: ports})
	return s, log, err
}

// TestRunnerAllowList: a box for an allow-list without the run's proxy
// fails to start (fail closed); with it, the command's proxy variables
// name the proxy's port with the run's secret and the profile allows that
// port.
func TestRunnerAllowList(t *testing.T) {
	if _, _, err := runnerRigFor(t, func(p *policy.Policy) { p.Network.Mode = policy.NetworkProxy }); err == nil ||
		!strings.Contains(err.Error(), "needs the run's network proxy") {
		t.Fatalf("start without the run's proxy = %v, want a refusal", err)
	}
	const secret = "5ec7e75ec7e75ec7e75ec7e75ec7e75e"
	s, _, err := runnerRigFor(t, func(p *policy.Policy) {
		p.Network.Mode = policy.NetworkProxy
		p.Network.HostProxy = &policy.HostProxy{Port: 49152, Secret: secret}
		p.Env = append(p.Env, policy.ProxyEnv()...)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	_, out, _ := s.runFor(t, 10*time.Second, "/bin/sh", "-c", `echo "$HTTPS_PROXY"`)
	if want := "http://ts:" + secret + "@127.0.0.1:49152\n"; out != want {
		t.Errorf("HTTPS_PROXY = %q, want %q", out, want)
	}
	art, err := s.render(context.Background(), backends.Command{Argv: []string{"true"}}, "")
	if err != nil || !strings.Contains(art.Profile, `(allow network-outbound
  (remote ip "localhost:49152"))`) || strings.Contains(art.Profile, secret) {
		t.Errorf("the profile does not allow the proxy's port alone, or shows the secret (%v)", err)
	}
}

func (s *box) runFor(t *testing.T, timeout time.Duration, argv ...string) (backends.Result, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	res, err := s.Exec(context.Background(), backends.Command{Argv: argv, Timeout: timeout}, backends.Streams{Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatalf("Exec %q: %v", argv, err)
	}
	return res, out.String(), errOut.String()
}

func TestRunner(t *testing.T) {
	s, log := runnerRig(t)
	if fi, err := os.Stat(s.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("run directory %s: %v, %v", s.dir, fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, ownerFile)); err != nil {
		t.Errorf("no ownership record: %v", err)
	}
	res, out, _ := s.runFor(t, 10*time.Second, "/bin/sh", "-c", `echo "$HOME|$TMPDIR"; echo err >&2; exit 3`)
	if res.ExitCode != 3 || res.Sandbox != s.ID() {
		t.Errorf("result %+v, want exit 3 from %s", res, s.ID())
	}
	if want := s.scratch.Home + "|" + s.scratch.Tmp + "\n"; out != want {
		t.Errorf("HOME|TMPDIR = %q, want %q", out, want)
	}
	calls, _ := os.ReadFile(log)
	if !strings.Contains(string(calls), filepath.Join(s.dir, "profile-1.sb")) {
		t.Errorf("the profile was not passed with -f: %q", calls)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "profile-1.sb")); err == nil {
		t.Error("the profile file outlived its command")
	}
	if res, _, errOut := s.runFor(t, 10*time.Second, "no-such-command-xyz"); res.ExitCode != 127 || !strings.Contains(errOut, "command not found") {
		t.Errorf("missing command: %+v %q", res, errOut)
	}
	start := time.Now()
	if res, _, _ := s.runFor(t, 500*time.Millisecond, "/bin/sleep", "30"); !res.TimedOut || res.ExitCode != 124 || time.Since(start) > 10*time.Second {
		t.Errorf("timeout: %+v after %s", res, time.Since(start))
	}
	// Cancelling ends the command's tree.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := s.Exec(ctx, backends.Command{Argv: []string{"/bin/sleep", "30"}}, backends.Streams{})
	if err != nil || !res.Canceled || res.ExitCode != 130 {
		t.Errorf("cancel: %+v, %v", res, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("the run directory is still there after Close: %v", err)
	}
	if _, err := s.Exec(context.Background(), backends.Command{Argv: []string{"/bin/true"}}, backends.Streams{}); err == nil {
		t.Error("Exec after Close ran")
	}
}

func TestEnsureStateDirRefusesOpenDirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureStateDir(dir); err == nil || !strings.Contains(err.Error(), "mode 0700") {
		t.Errorf("a world-writable state directory was accepted: %v", err)
	}
}

// A state directory below one other users can write but not sticky is
// refused too: they could replace it between runs (issue 22, #3's class).
func TestEnsureStateDirRefusesReplaceableParents(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureStateDir(filepath.Join(shared, "state")); err == nil || !strings.Contains(err.Error(), shared) {
		t.Errorf("a state directory others can replace was accepted: %v", err)
	}
	if _, err := ensureStateDir(filepath.Join(t.TempDir(), "state")); err != nil {
		t.Errorf("the caller's own: %v", err)
	}
}

// TestRunnerCloseEndsTheCommand: closing a sandbox while a command runs
// ends the command and returns, rather than waiting for its timeout.
func TestRunnerCloseEndsTheCommand(t *testing.T) {
	s, _ := runnerRig(t)
	done := make(chan error, 1)
	go func() {
		_, err := s.Exec(context.Background(), backends.Command{Argv: []string{"/bin/sleep", "60"}, Timeout: time.Minute}, backends.Streams{})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "ended under the command") {
			t.Errorf("Exec after Close: %v, want the sandbox-ended error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Exec did not return after Close")
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Close took %s", d)
	}
}

// TestRunnerRlimits: a profile has no rlimits, so the supervisor sets the
// policy's on itself before sandbox-exec: the command sees them, and a
// write past the file size limit fails at the limit.
func TestRunnerRlimits(t *testing.T) {
	s, _, err := runnerRigFor(t, func(p *policy.Policy) { p.Limits.FileSize, p.Limits.NoFile = 1<<20, 300 })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	res, out, errOut := s.runFor(t, 20*time.Second, "/bin/sh", "-c",
		`echo "$(ulimit -n) $(ulimit -c)"; head -c 3000000 /dev/zero > repros/big; echo "big=$?"; wc -c < repros/big`)
	words := strings.Fields(out)
	if res.ExitCode != 0 || len(words) != 4 || words[0] != "300" || words[1] != "0" || words[2] == "big=0" || words[3] != "1048576" {
		t.Errorf("nofile, core, the write's status and size: %q (%+v, %q), want 300 0, a failed write, 1048576", out, res, errOut)
	}
}
