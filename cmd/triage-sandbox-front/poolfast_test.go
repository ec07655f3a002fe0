package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// poolSize is the pool the pooled tests keep.
const poolSize = 2

// newPoolSetup is a workspace on the local backend whose agent runs are
// pooled, with the pool's keeper started by the CLI (the first run, which
// also notes the route the front takes from then on).
func newPoolSetup(t *testing.T) fastSetup {
	t.Helper()
	testenv.SkipShort(t, "runs a pool on the local backend")
	testenv.RequireRoot(t, "the local backend confines as root here")
	front := testenv.FrontPair(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	warmDir := filepath.Join(dir, "warm")
	for _, d := range []string{ws, warmDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "[sandbox]\nbackend = \"local\"\npool = " + strconv.Itoa(poolSize) + "\nconfirm = [\"make deploy*\"]\n"
	if err := os.WriteFile(filepath.Join(ws, "triage.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	s := fastSetup{front: front, cli: filepath.Join(filepath.Dir(front), "triage-sandbox-cli"), ws: ws, trace: filepath.Join(dir, "trace.jsonl")}
	s.env = []string{"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "TRIAGE_SANDBOX_WARM_DIR=" + warmDir,
		"TRIAGE_SANDBOX_TRACE=" + s.trace, "GITHUB_TOKEN=" + secret}
	// Every agent pool of the workspace: a changed config starts another.
	t.Cleanup(func() { runBin(t, ws, s.env, s.cli, "session", "end", "pool:agent") })
	if r := runBin(t, ws, s.env, front, "run", "--", "true"); r.code != 0 {
		t.Fatalf("starting the pool: %+v", r)
	}
	return s
}

// sandboxField is a run report's sandbox id.
var sandboxField = regexp.MustCompile(`"sandbox":"[^"]*"`)

// sandboxOf is the sandbox a --json run ran in.
func sandboxOf(t *testing.T, r ran) string {
	t.Helper()
	var rep struct {
		Sandbox string `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Sandbox == "" {
		t.Fatalf("no sandbox in the report (%v): %+v", err, r)
	}
	return rep.Sandbox
}

// TestPooledFastPathSameAsCLI: a pooled run through the front (the pool's
// keeper runs it in a sandbox it takes, then discards) prints the same
// bytes on stdout and stderr and exits with the same code as the CLI's
// own run of the same pool: exit codes 0/3/126/127/124, both streams, a
// redacted secret, a gate refusal, a bad flag, --json (each run in a
// sandbox of its own). What the keeper must not do (ask the operator,
// read stdin), a changed config and another environment fall back to the
// CLI before anything ran; the trace says which path ran each.
func TestPooledFastPathSameAsCLI(t *testing.T) {
	s := newPoolSetup(t)
	run := func(args ...string) []string { return append([]string{"run"}, args...) }
	for _, tt := range sameAsCLICases(run) {
		t.Run(tt.name, func(t *testing.T) {
			off := s.traceLen(t)
			got := runBin(t, s.ws, s.env, s.front, tt.args...)
			procs, fast, end := s.procsSince(t, off)
			want := runBin(t, s.ws, s.env, s.cli, tt.args...)
			if fast != tt.fast || procs["cli"] == tt.fast {
				t.Errorf("fast path taken: %v (processes %v), want %v", fast, procs, tt.fast)
			}
			if _, cliFast, _ := s.procsSince(t, end); cliFast {
				t.Errorf("the CLI's own run went the keeper's fast path")
			}
			if tt.name == "json" {
				// One command per sandbox: the two runs had two.
				if a, b := sandboxOf(t, got), sandboxOf(t, want); a == b {
					t.Errorf("both runs ran in %s", a)
				}
				got.stdout = jsonShape(sandboxField.ReplaceAllString(got.stdout, `"sandbox":"S"`))
				want.stdout = jsonShape(sandboxField.ReplaceAllString(want.stdout, `"sandbox":"S"`))
			}
			if got != want {
				t.Fatalf("front: %+v\nCLI:   %+v", got, want)
			}
			if want.code != tt.code {
				t.Fatalf("exit %d, want %d: %+v", want.code, tt.code, want)
			}
			if strings.Contains(got.stdout+got.stderr, secret) {
				t.Fatalf("the secret was shown: %+v", got)
			}
		})
	}
	// Another environment: the keeper's is not the run's.
	off := s.traceLen(t)
	got := runBin(t, s.ws, append(s.env, "SOME_NEW_VARIABLE=1"), s.front, "run", "--", "true")
	if procs, fast, _ := s.procsSince(t, off); fast || !procs["cli"] || got.code != 0 {
		t.Fatalf("another environment: fast %v, processes %v, %+v", fast, procs, got)
	}
	// A config changed since the keeper started: its policy is not the
	// run's, so the CLI runs it (in a pool of the new policy's).
	if err := os.WriteFile(filepath.Join(s.ws, "triage.toml"), []byte("[sandbox]\nbackend = \"local\"\npool = 2\nconfirm = [\"make release*\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	off = s.traceLen(t)
	got = runBin(t, s.ws, s.env, s.front, "run", "--", "true")
	procs, fast, _ := s.procsSince(t, off)
	if fast || !procs["cli"] || got.code != 0 {
		t.Fatalf("after a config change: fast %v, processes %v, %+v", fast, procs, got)
	}
	if !strings.Contains(s.since(t, off), `"phase":"keeper.fast.fallback"`) {
		t.Fatalf("after a config change: the old pool's keeper did not fall back:\n%s", s.since(t, off))
	}
	// The CLI's run noted the new pool's route: the next run is fast again.
	off = s.traceLen(t)
	if got = runBin(t, s.ws, s.env, s.front, "run", "--", "true"); got.code != 0 {
		t.Fatalf("after the new pool started: %+v", got)
	}
	if procs, fast, _ := s.procsSince(t, off); !fast {
		t.Fatalf("the new pool's route was not taken: processes %v", procs)
	}
}

// since is the trace after offset bytes.
func (s fastSetup) since(t *testing.T, offset int) string {
	t.Helper()
	b, err := os.ReadFile(s.trace)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[offset:])
}

// keeperPID is the pid of the workspace's one agent pool keeper.
func (s fastSetup) keeperPID(t *testing.T) int {
	t.Helper()
	r := runBin(t, s.ws, s.env, s.cli, "session", "list", "--json")
	var recs []struct {
		Name      string `json:"name"`
		Workspace string `json:"workspace"`
		PID       int    `json:"pid"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("session list --json: %v: %+v", err, r)
	}
	pid := 0
	for _, rec := range recs {
		if rec.Name == "pool:agent" && rec.Workspace == s.ws {
			if pid != 0 {
				t.Fatalf("two agent pools: %+v", recs)
			}
			pid = rec.PID
		}
	}
	if pid == 0 {
		t.Fatalf("no agent pool: %+v", recs)
	}
	return pid
}

// sandboxes counts the local sandboxes (helpers, `__local`) keeper pid
// holds.
func sandboxes(t *testing.T, pid int) int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(pid), "-f", "__local").Output()
	return len(strings.Fields(string(out)))
}

// awaitSandboxes waits until keeper pid holds n sandboxes.
func awaitSandboxes(t *testing.T, pid, n int, why string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for sandboxes(t, pid) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the keeper holds %d sandboxes, want %d", why, sandboxes(t, pid), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPooledFastPathRefills: each pooled run through the front gets a
// sandbox of its own, and once the runs end the pool is full again.
func TestPooledFastPathRefills(t *testing.T) {
	s := newPoolSetup(t)
	pid := s.keeperPID(t)
	awaitSandboxes(t, pid, poolSize, "after the first run")
	seen := map[string]bool{}
	off := s.traceLen(t)
	for i := 0; i < 2*poolSize+1; i++ {
		r := runBin(t, s.ws, s.env, s.front, "run", "--json", "--", "true")
		if r.code != 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
		id := sandboxOf(t, r)
		if seen[id] {
			t.Fatalf("run %d ran in %s again", i, id)
		}
		seen[id] = true
	}
	if procs, fast, _ := s.procsSince(t, off); !fast {
		t.Fatalf("not the fast path: processes %v", procs)
	}
	if n := strings.Count(s.since(t, off), `"phase":"keeper.take"`); n != 2*poolSize+1 {
		t.Fatalf("%d takes for %d runs", n, 2*poolSize+1)
	}
	awaitSandboxes(t, pid, poolSize, "after the runs")
	// Its end leaves nothing: no sandbox, no socket of the keeper's.
	if r := runBin(t, s.ws, s.env, s.cli, "session", "end", "pool:agent"); r.code != 0 {
		t.Fatalf("session end: %+v", r)
	}
	if n := sandboxes(t, pid); n != 0 {
		t.Fatalf("%d sandboxes after the pool's end", n)
	}
	warmDir := strings.TrimPrefix(s.env[1], "TRIAGE_SANDBOX_WARM_DIR=")
	// The keeper's own sockets go with it; its host's, once the host held
	// no keeper for its grace (a few seconds).
	var left []string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left, _ = filepath.Glob(filepath.Join(warmDir, "*.sock"))
		keepers := 0
		for _, sock := range left {
			if !strings.HasPrefix(filepath.Base(sock), "host-") {
				keepers++
			}
		}
		if keepers != 0 {
			t.Fatalf("left after the pool's end: %v", left)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) != 0 {
		t.Fatalf("left after the pool's end and its host's grace: %v", left)
	}
}

// TestPooledFastPathFrontKilled: a front killed with SIGKILL while the
// pool's keeper runs its command leaves nothing: the keeper sees the
// connection go, kills the command's tree and discards the sandbox, which
// no later run gets (its scratch's mark is in none), and the pool is
// full again.
func TestPooledFastPathFrontKilled(t *testing.T) {
	s := newPoolSetup(t)
	pid := s.keeperPID(t)
	awaitSandboxes(t, pid, poolSize, "after the first run")
	off := s.traceLen(t)
	cmd := exec.Command(s.front, "run", "--", "sh", "-c", "touch $HOME/used-by-the-killed-run; exec sleep 31.75")
	killFrontMidCommand(t, s, cmd, "31.75", off)
	awaitSandboxes(t, pid, poolSize, "after the kill")
	// Every sandbox the pool holds now, and one started for a run past
	// them, is fresh.
	for i := 0; i < poolSize+1; i++ {
		r := runBin(t, s.ws, s.env, s.front, "run", "--", "sh", "-c", "test ! -e $HOME/used-by-the-killed-run")
		if r.code != 0 {
			t.Fatalf("run %d after the kill ran in the killed run's sandbox (or failed): %+v", i, r)
		}
	}
}
