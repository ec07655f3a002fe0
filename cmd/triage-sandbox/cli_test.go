package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, dir string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Dir = dir
	// Audit logs go to the state directory: one per test, not the user's.
	cmd.Env = append(append(os.Environ(), "XDG_STATE_HOME="+stateDir(t)), env...)
	return runCmd(t, cmd)
}

// runCmd runs cmd to its end and returns its exit code and output; only a
// failure to run it at all ends the test.
func runCmd(t *testing.T, cmd *exec.Cmd) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{code, stdout.String(), stderr.String()}
}

// stateDir is the test's XDG_STATE_HOME (made once per test).
func stateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "triage-sandbox-test-state", strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// auditLines reads every audit record the test's runs wrote.
func auditLines(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(stateDir(t), "triage-sandbox", "audit", "*.jsonl"))
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return string(all)
}

// workspace writes triage.toml (if body != "") in a fresh workspace with a
// checkout beside it.
func workspace(t testing.TB, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "ws")
	for _, d := range []string{root, filepath.Join(dir, "widgets")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if body != "" {
		if err := os.WriteFile(filepath.Join(root, "triage.toml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestBadInput: every refusal is exit 125 with one line per problem on
// stderr that says what and where, and nothing is run.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name   string
		config string
		setup  func(t *testing.T, root string)
		env    []string
		args   []string
		want   []string // substrings of stderr
		docker bool
	}{
		{name: "missing config file", args: []string{"run", "--config", "/nonexistent/triage.toml", "--", "true"},
			want: []string{"/nonexistent/triage.toml", "no such file"}},
		{name: "malformed config", config: "[sandbox]\nnetwork = \n", args: []string{"run", "--", "true"},
			want: []string{"triage.toml:2"}},
		{name: "unknown key", config: "[sandbox]\nnetwork = false\nnetwrk = true\n", args: []string{"run", "--", "true"},
			want: []string{"triage.toml:3", "netwrk", `"network"`}},
		{name: "wrong type", config: "[sandbox]\nnetwork = \"no\"\n", args: []string{"run", "--", "true"},
			want: []string{"triage.toml:2", "network"}},
		{name: "writable outside root", config: "[sandbox]\nwritable = [\"../out\"]\n", args: []string{"run", "--", "true"},
			want: []string{"triage.toml:2", "../out"}},
		{name: "writable symlink", config: "[sandbox.reproducer]\nwritable = [\"repros\"]\n",
			setup: func(t *testing.T, root string) {
				if err := os.Symlink("/tmp", filepath.Join(root, "repros")); err != nil {
					t.Fatal(err)
				}
			},
			args: []string{"run", "--role", "reproducer", "--", "true"}, want: []string{"repros", "symlink"}},
		{name: "missing checkout", config: "[project]\ncheckout = \"../nope\"\n", args: []string{"run", "--", "true"},
			want: []string{"checkout", "does not exist"}},
		{name: "bad role", args: []string{"run", "--role", "admin", "--", "true"}, want: []string{"--role", "agent or reproducer"}},
		{name: "empty command", args: []string{"run"}, want: []string{"empty command"}},
		{name: "negative timeout", args: []string{"run", "--timeout", "-5s", "--", "true"}, want: []string{"--timeout -5s", "between 1s and 24h"}},
		{name: "timeout that wraps", args: []string{"run", "--timeout", "2562047h47m16s", "--", "true"}, want: []string{"--timeout", "between 1s and 24h"}},
		{name: "config timeout that overflows", config: "[sandbox]\ntimeout = 9999999999\n", args: []string{"run", "--", "true"},
			want: []string{"triage.toml:2", "between 1 and 86400"}},
		{name: "writable covers the config", config: "[sandbox]\nwritable = [\"triage.toml\"]\n", args: []string{"run", "--", "true"},
			want: []string{"writable", "covers the config"}},
		{name: "command without --", args: []string{"run", "ls"}, want: []string{"after --"}},
		{name: "unknown flag", args: []string{"run", "--netwrk", "--", "true"}, want: []string{"netwrk"}},
		{name: "bad workdir", args: []string{"run", "--workdir", "/etc", "--", "true"}, want: []string{"--workdir", "not a directory visible"}},
		{name: "daemon unreachable", env: []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, args: []string{"run", "--", "true"},
			want: []string{"cannot reach the Docker daemon", "start it"}},
		{name: "config is not a readable file", setup: func(t *testing.T, root string) {
			if err := os.Mkdir(filepath.Join(root, "cfg.toml"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"run", "--config", "cfg.toml", "--", "true"}, want: []string{"cfg.toml", "is a directory"}},
		{name: "workspace disk full", setup: func(t *testing.T, root string) {
			testenv.RequireRoot(t, "mounting a tiny tmpfs")
			// Room for the root, triage.toml and one more inode: the
			// writable paths cannot all be created.
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,nr_inodes=4", "tmpfs", root).CombinedOutput(); err != nil {
				t.Skipf("cannot mount tmpfs: %v %s", err, out)
			}
			t.Cleanup(func() { _ = exec.Command("umount", root).Run() })
			if err := os.WriteFile(filepath.Join(root, "triage.toml"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"run", "--", "true"}, want: []string{"no space left on device"}},
		{name: "image missing", config: "[sandbox]\nimage = \"triage-sandbox-test:missing\"\n", args: []string{"run", "--", "true"},
			want: []string{"triage-sandbox-test:missing", "not found"}, docker: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.docker {
				testenv.RequireDocker(t)
			}
			root := workspace(t, tt.config)
			if tt.setup != nil {
				tt.setup(t, root)
			}
			r := runCLI(t, root, tt.env, tt.args...)
			if r.code != 125 {
				t.Fatalf("exit = %d, want 125; stderr %q", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 {
				t.Errorf("want one line, got %d: %q", len(lines), r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if r.stdout != "" {
				t.Errorf("nothing should reach stdout: %q", r.stdout)
			}
		})
	}
}

// allow_all runs on the host, unconfined, and says so on every run; its
// selftest fails every check.
func TestAllowAllRunsUnconfinedLoudly(t *testing.T) {
	root := workspace(t, "[sandbox]\nallow_all = true\n")
	r := runCLI(t, root, []string{"TRIAGE_ALLOW_ALL_CANARY=seen"}, "run", "--", "sh", "-c", "echo $TRIAGE_ALLOW_ALL_CANARY; exit 3")
	if r.code != 3 || r.stdout != "seen\n" || !strings.Contains(r.stderr, "UNCONFINED") {
		t.Fatalf("run: %+v", r)
	}
	r = runCLI(t, root, nil, "selftest", "--role", "agent")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "no isolation") || strings.Contains(r.stdout, "\n  ok ") {
		t.Fatalf("selftest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestTwoProblemsReportedTogether(t *testing.T) {
	root := workspace(t, "[sandbox]\nnetwrk = true\nmemory = \"lots\"\n")
	r := runCLI(t, root, nil, "run", "--", "true")
	if r.code != 125 || strings.Count(r.stderr, "triage.toml:") != 2 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

func TestRunEndToEnd(t *testing.T) {
	testenv.RequireDocker(t)
	root := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	t.Run("exit code and streams", func(t *testing.T) {
		r := runCLI(t, root, nil, "run", "--role", "reproducer", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
		if r.code != 7 || r.stdout != "out\n" || !strings.Contains(r.stderr, "err") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("not found is 127", func(t *testing.T) {
		if r := runCLI(t, root, nil, "run", "--", "no-such-binary"); r.code != 127 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("stdin closed by default", func(t *testing.T) {
		cmd := exec.Command(testenv.Binary(t), "run", "--", "sh", "-c", "cat; echo done")
		cmd.Dir = root
		cmd.Stdin = strings.NewReader("secret input\n")
		out, err := cmd.Output()
		if err != nil || string(out) != "done\n" {
			t.Fatalf("out %q err %v", out, err)
		}
	})
	t.Run("stdin when asked", func(t *testing.T) {
		cmd := exec.Command(testenv.Binary(t), "run", "--stdin", "--", "sh", "-c", "cat")
		cmd.Dir = root
		cmd.Stdin = strings.NewReader("piped\n")
		out, err := cmd.Output()
		if err != nil || string(out) != "piped\n" {
			t.Fatalf("out %q err %v", out, err)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := runCLI(t, root, nil, "run", "--json", "--", "sh", "-c", "echo hello; exit 2")
		var got struct {
			ExitCode   int    `json:"exit_code"`
			Stdout     string `json:"stdout"`
			PolicyHash string `json:"policy_hash"`
			TimedOut   bool   `json:"timed_out"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("not one JSON object: %q", r.stdout)
		}
		if r.code != 2 || got.ExitCode != 2 || got.Stdout != "hello\n" || !strings.HasPrefix(got.PolicyHash, "sha256:") {
			t.Fatalf("%+v %+v", r, got)
		}
	})
	t.Run("output ceiling stops the command", func(t *testing.T) {
		root := workspace(t, "[sandbox]\noutput_ceiling = \"8m\"\n")
		r := runCLI(t, root, nil, "run", "--json", "--", "sh", "-c", "cat /dev/zero")
		var got struct {
			ExitCode      int  `json:"exit_code"`
			OutputCeiling bool `json:"output_ceiling"`
			Truncated     bool `json:"truncated"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 137 || !got.OutputCeiling || !got.Truncated ||
			!strings.Contains(r.stderr, "printed more than") {
			t.Fatalf("%+v %+v", r, got)
		}
	})
	t.Run("secrets redacted, escapes neutralised, audit written", func(t *testing.T) {
		r := runCLI(t, root, []string{"MY_API_TOKEN=tok-1234567890abcdef"}, "run", "--", "sh", "-c",
			`printf '\033]52;c;ZXZpbA==\007 tok-1234567890abcdef\n'; echo tok-1234567890abcdef >&2`)
		if strings.Contains(r.stdout+r.stderr, "tok-1234567890abcdef") || strings.Contains(r.stdout, "\x1b") ||
			!strings.Contains(r.stdout, "<redacted:MY_API_TOKEN>") {
			t.Fatalf("%+v", r)
		}
		b := auditLines(t)
		if !strings.Contains(b, `"policy_hash"`) || strings.Contains(b, "tok-1234567890abcdef") {
			t.Fatalf("audit: %s", b)
		}
	})
	t.Run("git works on the read-only checkout whatever the uid", func(t *testing.T) {
		checkout := filepath.Join(filepath.Dir(root), "widgets")
		git := exec.Command("sh", "-c", "git init -q && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m selftest-commit")
		git.Dir = checkout
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git on the host: %v %s", err, out)
		}
		r := runCLI(t, root, nil, "run", "--workdir", checkout, "--", "sh", "-c", "git status --short && git log --oneline")
		if r.code != 0 || !strings.Contains(r.stdout, "selftest-commit") || strings.Contains(r.stderr, "dubious ownership") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("timeout prints exactly one line of its own", func(t *testing.T) {
		r := runCLI(t, root, nil, "run", "--timeout", "2s", "--", "sleep", "10")
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 124 || len(lines) != 1 || !strings.Contains(lines[0], "timed out after 2s") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("timeout with --json keeps stderr the command's", func(t *testing.T) {
		r := runCLI(t, root, nil, "run", "--json", "--timeout", "1s", "--", "sleep", "10")
		var got struct {
			TimedOut   bool    `json:"timed_out"`
			Stderr     string  `json:"stderr"`
			DurationMS float64 `json:"duration_ms"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || !got.TimedOut || got.Stderr != "" {
			t.Fatalf("%+v %+v", r, got)
		}
		// duration_ms is the command's: from its start to its end, not the
		// container's set-up and removal.
		if got.DurationMS < 900 || got.DurationMS > 2500 {
			t.Errorf("duration_ms = %.0f for a 1s timeout", got.DurationMS)
		}
	})
}

func TestDoctor(t *testing.T) {
	testenv.RequireDocker(t)
	t.Run("checks the configured image", func(t *testing.T) {
		root := workspace(t, "[sandbox]\nimage = \"triage-sandbox-test:no-such-image\"\n")
		r := runCLI(t, root, nil, "doctor")
		if r.code != 1 || !strings.Contains(r.stdout, "triage-sandbox-test:no-such-image not found") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("runs the configured python inside", func(t *testing.T) {
		root := workspace(t, "")
		env := filepath.Join(filepath.Dir(root), "env")
		if err := os.MkdirAll(filepath.Join(env, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		// An interpreter that exists on the host but cannot start inside.
		if err := os.WriteFile(filepath.Join(env, "bin", "python3"), []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "triage.toml"), []byte("[project]\npython = \"../env/bin/python3\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, root, nil, "doctor")
		if r.code != 1 || !strings.Contains(r.stdout, "FAIL  python for reproducer") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("a warning is a warning, once", func(t *testing.T) {
		root := workspace(t, "[project]\npython = \"/no/such/python3\"\n")
		r := runCLI(t, root, nil, "doctor")
		if strings.Contains(r.stdout, "FAIL") || strings.Count(r.stdout, "\"/no/such/python3\"") != 1 ||
			!strings.Contains(r.stdout, "warn ") {
			t.Fatalf("%+v", r)
		}
	})
}

func TestRenderAndPolicy(t *testing.T) {
	root := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	for _, role := range []string{"agent", "reproducer"} {
		r := runCLI(t, root, nil, "render", "--role", role, "--backend", "docker")
		var art struct {
			Create struct {
				Config     map[string]any `json:"config"`
				HostConfig map[string]any `json:"host_config"`
			} `json:"create"`
			Exec struct {
				Cmd []string `json:"Cmd"`
			} `json:"exec"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &art) != nil || art.Create.HostConfig["NetworkMode"] != "none" ||
			len(art.Exec.Cmd) != 3 || art.Exec.Cmd[1] != string(protocol.EntryExec) {
			t.Fatalf("render %s: %+v", role, r)
		}
		if x, err := protocol.DecodeExec(art.Exec.Cmd[2:]); err != nil || x.Argv[0] != "/bin/sh" || x.Timeout == 0 {
			t.Fatalf("render %s: the supervisor's spec %s: %+v, %v", role, art.Exec.Cmd[2], x, err)
		}
		r = runCLI(t, root, nil, "render", "--role", role, "--backend", "oci")
		var spec struct {
			OCIVersion string `json:"ociVersion"`
			Process    struct {
				NoNewPrivileges bool `json:"noNewPrivileges"`
				User            struct {
					UID int `json:"uid"`
				} `json:"user"`
				Env []string `json:"env"`
			} `json:"process"`
			Linux struct {
				Seccomp map[string]any `json:"seccomp"`
			} `json:"linux"`
			Annotations map[string]string `json:"annotations"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &spec) != nil || spec.OCIVersion == "" ||
			!spec.Process.NoNewPrivileges || spec.Process.User.UID == 0 || spec.Linux.Seccomp == nil ||
			!strings.Contains(spec.Annotations["io.triage-sandbox.exec-process"], "/bin/sh") {
			t.Fatalf("render oci %s: %+v", role, r)
		}
		// The policy is built for oci (its own capabilities), not for docker.
		if !slices.Contains(spec.Process.Env, "TRIAGE_SANDBOX_BACKEND=oci") {
			t.Errorf("render oci %s: env %v, want the policy built for oci", role, spec.Process.Env)
		}
		r = runCLI(t, root, []string{"GITHUB_TOKEN=canary-xyz"}, "policy", "--role", role)
		for _, want := range []string{"readable", "writable", "unreadable", ".ssh", "GITHUB_TOKEN", "loopback only"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("policy %s lacks %q:\n%s", role, want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "canary-xyz") {
			t.Errorf("policy output shows a withheld value")
		}
	}
}

// TestRenderForItsBackend: render builds the policy for the chosen backend,
// so what that backend cannot enforce is refused as run would refuse it:
// network = true on oci (no NAT'd namespace) names the missing capability.
func TestRenderForItsBackend(t *testing.T) {
	root := workspace(t, "[project]\ncheckout = \"../widgets\"\n[sandbox]\nnetwork = true\n")
	r := runCLI(t, root, nil, "render", "--role", "reproducer", "--backend", "oci")
	if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, "oci backend cannot enforce outbound_nat") {
		t.Fatalf("render oci with network = true: %+v", r)
	}
	if r = runCLI(t, root, nil, "render", "--role", "reproducer", "--backend", "docker"); r.code != 0 {
		t.Fatalf("render docker with network = true: %+v", r)
	}
}

// TestConfigRefusalAudited: a run refused at config load is recorded too,
// in the workspace's default audit log, with secrets redacted.
func TestConfigRefusalAudited(t *testing.T) {
	root := workspace(t, "[sandbox]\nnetwork = \n")
	r := runCLI(t, root, []string{"MY_API_TOKEN=tok-1234567890abcdef"}, "run", "--", "echo", "tok-1234567890abcdef")
	if r.code != 125 {
		t.Fatalf("%+v", r)
	}
	lines := auditLines(t)
	if !strings.Contains(lines, `"exit_code":125`) || !strings.Contains(lines, "triage.toml:2") ||
		strings.Contains(lines, "tok-1234567890abcdef") || !strings.Contains(lines, "redacted:MY_API_TOKEN") {
		t.Fatalf("audit: %s", lines)
	}
}

// TestFailureHints: a failure caused by the sandbox says so (on stderr and
// in --json), a plain failure says nothing.
func TestFailureHints(t *testing.T) {
	testenv.RequireDocker(t)
	if _, err := exec.LookPath("less"); err != nil {
		t.Fatalf("the host needs less for this test: %v", err)
	}
	// The image's toolchain (the host's would bring less along).
	root := workspace(t, "[project]\ncheckout = \"../widgets\"\n[sandbox]\ntoolchain = \"image\"\n")
	r := runCLI(t, root, nil, "run", "--json", "--", "sh", "-c", "less --version")
	var got struct {
		Hints  []string `json:"hints"`
		Stdout string   `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.Hints) != 1 ||
		!strings.Contains(got.Hints[0], "less is missing in the sandbox but the host has it") ||
		!strings.Contains(r.stderr, "triage-sandbox: hint: less is missing") || strings.Contains(got.Stdout, "hint") {
		t.Fatalf("%+v %+v", r, got)
	}
	r = runCLI(t, root, nil, "run", "--", "sh", "-c", "echo 'AssertionError: 1 != 2' >&2; exit 1")
	if r.code != 1 || strings.Contains(r.stderr, "hint") {
		t.Fatalf("a plain failure got a hint: %+v", r)
	}
}
