package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// testdata/ai-triager.toml is a copy of the shared fixture
// (fixtures/ai-triager-workspace/triage.toml) so the package tests stand alone.
const fixture = "testdata/ai-triager.toml"

func TestLoadFixture(t *testing.T) {
	f, err := Load(fixture)
	if err != nil {
		t.Fatalf("Load(%s): %v", fixture, err)
	}
	wantRoot, _ := filepath.Abs("testdata")
	if f.Root != wantRoot {
		t.Errorf("Root = %q, want %q", f.Root, wantRoot)
	}
	if f.Path != filepath.Join(wantRoot, "ai-triager.toml") {
		t.Errorf("Path = %q, want absolute path of the fixture", f.Path)
	}
	if f.Project.Checkout != "../widgets" || f.Project.Python != ".venv/bin/python" {
		t.Errorf("Project = %+v", f.Project)
	}
	if f.Repro.Timeout == nil || *f.Repro.Timeout != 120 {
		t.Errorf("Repro.Timeout = %v, want 120", f.Repro.Timeout)
	}

	agent := f.Resolve("agent")
	if want := []string{"issues", "repros", "NOTES.md", "INDEX.md", ".triage"}; !slices.Equal(agent.Writable, want) {
		t.Errorf("agent Writable = %q, want %q", agent.Writable, want)
	}
	repro := f.Resolve("reproducer")
	if want := []string{"repros"}; !slices.Equal(repro.Writable, want) {
		t.Errorf("reproducer Writable = %q, want %q", repro.Writable, want)
	}
	for _, sb := range []Sandbox{agent, repro} {
		if want := []string{"CONDA_PREFIX", "PIXI_*"}; !slices.Equal(sb.Env, want) {
			t.Errorf("Env = %q, want %q", sb.Env, want)
		}
		if sb.Network == nil || !sb.Network.Off() {
			t.Errorf("Network = %v, want false", sb.Network)
		}
		// Defaults are policy's business: nothing else is filled in.
		if sb.Backend != nil || sb.Image != nil || sb.Secrets != nil || sb.Memory != nil || sb.Timeout != nil {
			t.Errorf("unset keys were filled in: %+v", sb)
		}
	}
	if f.Sandbox.Writable != nil {
		t.Errorf("[sandbox] Writable = %q, want nil (unset)", f.Sandbox.Writable)
	}

	g := f.Guard
	if g.Enabled == nil || !*g.Enabled || g.Model == nil || *g.Model != "jev:jev-latest" ||
		g.MinSafe == nil || *g.MinSafe != 0.5 || g.MaxRisk == nil || *g.MaxRisk != 0.7 ||
		g.URL != nil || g.Timeout != nil {
		t.Errorf("Guard = %+v", g)
	}
}

// TestFixtureInSync catches the testdata copy drifting from the shared fixture.
func TestFixtureInSync(t *testing.T) {
	shared := "../../shared/fixtures/ai-triager-workspace/triage.toml"
	want, err := os.ReadFile(shared)
	if err != nil {
		t.Skipf("shared fixture not available: %v", err)
	}
	got, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s; copy it again", fixture, shared)
	}
	if _, err := Load(shared); err != nil {
		t.Errorf("Load(%s): %v", shared, err)
	}
}

const allSandboxKeys = "valid keys: backend, network, image, env, secrets, writable, allow_all, set_env, " +
	"timeout, memory, cpus, pids, tmpfs_size, shm_size, file_size, writable_size, writable_inodes, runtime, namespace, kubernetes_api, user, output_limit, output_ceiling, deny, confirm, gate_disable, gate_confirm, allow_dynamic, audit_log, accept_weaker, allow_tool_config, read_only, toolchain, checkout_writes, pool, warm_idle, broker"

// problemTests are documents with problems and the lines of their error, in order.
var problemTests = []struct {
	name string
	toml string
	want []string // the lines of the error, in order
}{
	{
		name: "unknown key with suggestion",
		toml: "[project]\nname = \"x\"\n\n[sandbox]\nnetwork = false\nnetwrk = false\n",
		want: []string{`triage.toml:6: sandbox.netwrk: unknown key; did you mean "network"?`},
	},
	{
		name: "unknown key case and prefix suggestions",
		toml: "[sandbox]\nNetwork = false\nmem = \"1g\"\n",
		want: []string{
			`triage.toml:2: sandbox.Network: unknown key; did you mean "network"?`,
			`triage.toml:3: sandbox.mem: unknown key; did you mean "memory"?`,
		},
	},
	{
		name: "unknown key without suggestion lists the valid keys",
		toml: "[sandbox.agent]\nxyzzy = 1\n",
		want: []string{`triage.toml:2: sandbox.agent.xyzzy: unknown key; ` + allSandboxKeys},
	},
	{
		name: "unknown table under sandbox",
		toml: "[sandbox]\n\n[sandbox.agnet]\nwritable = []\n",
		want: []string{`triage.toml:3: sandbox.agnet: unknown key; did you mean "agent"?`},
	},
	{
		name: "two problems both reported in line order",
		toml: "[sandbox]\nbackend = \"podman\"\n[sandbox.reproducer]\nnetwork = \"yes\"\n",
		want: []string{
			`triage.toml:2: sandbox.backend: unknown backend "podman"; use one of "docker", "oci", "seatbelt", "local"`,
			`triage.toml:4: sandbox.reproducer.network: expected a boolean or an array of allow-list entries, got string "yes"; e.g. network = false, or network = ["python", "files.example.org:443"]`,
		},
	},
	{
		name: "wrong types",
		toml: "[project]\ncheckout = 5\n[repro]\ntimeout = [2]\n[sandbox]\nenv = \"PIXI_*\"\ncpus = \"2\"\npids = 1.5\nset_env = [\"A=1\"]\n",
		want: []string{
			`triage.toml:2: project.checkout: expected a string, got integer 5`,
			`triage.toml:4: repro.timeout: expected an integer of seconds or a duration string ("5m"), got array`,
			`triage.toml:6: sandbox.env: expected an array of strings, got string "PIXI_*"`,
			`triage.toml:7: sandbox.cpus: expected a number, got string "2"`,
			`triage.toml:8: sandbox.pids: expected an integer, got float 1.5`,
			`triage.toml:9: sandbox.set_env: expected a table, got array`,
		},
	},
	{
		name: "bad sizes",
		toml: "[sandbox]\nmemory = \"2x\"\nshm_size = 0\ntmpfs_size = true\noutput_limit = \"0k\"\n",
		want: []string{
			`triage.toml:2: sandbox.memory: invalid size "2x"; write a byte count or a size such as "512m" or "2g"`,
			`triage.toml:3: sandbox.shm_size: size must be greater than zero, got 0; write a byte count or a size such as "512m" or "2g"`,
			`triage.toml:4: sandbox.tmpfs_size: expected a size, got boolean true`,
			`triage.toml:5: sandbox.output_limit: size "0k" must be greater than zero; write a byte count or a size such as "512m" or "2g"`,
		},
	},
	{
		name: "bad backend names the allowed values",
		toml: "[sandbox.agent]\nbackend = \"Docker\"\n",
		want: []string{`triage.toml:2: sandbox.agent.backend: unknown backend "Docker"; use one of "docker", "oci", "seatbelt", "local"`},
	},
	{
		name: "writable paths",
		toml: "[sandbox.agent]\nwritable = [\"issues\", \"/etc\", \"\", \"../out\", \"~/x\", 3]\n",
		want: []string{
			`triage.toml:2: sandbox.agent.writable: item 2: "/etc" must be relative to the workspace root; write it relative to the directory holding triage.toml`,
			`triage.toml:2: sandbox.agent.writable: item 3: must not be empty`,
			`triage.toml:2: sandbox.agent.writable: item 4: "../out" is outside the workspace root; writable paths must stay inside the directory holding triage.toml`,
			`triage.toml:2: sandbox.agent.writable: item 5: "~/x" must be relative to the workspace root; "~" is not expanded; write it relative to the directory holding triage.toml`,
			`triage.toml:2: sandbox.agent.writable: item 6: expected a string, got integer 3`,
		},
	},
	{
		name: "nested tables in role tables",
		toml: "[sandbox.agent]\nnetwork = true\n\n[sandbox.agent.guard]\nenabled = false\n\n[sandbox.reproducer.limits]\nmemory = \"1g\"\n",
		want: []string{
			`triage.toml:4: sandbox.agent.guard: nested table not allowed in [sandbox.agent]; move it to [sandbox.guard]`,
			`triage.toml:7: sandbox.reproducer.limits: nested table not allowed in [sandbox.reproducer]; a per-role table only overrides [sandbox] keys`,
		},
	},
	{
		name: "role table that is not a table",
		toml: "[sandbox]\nagent = [\"x\"]\n[[sandbox.reproducer]]\nnetwork = true\n",
		want: []string{
			`triage.toml:2: sandbox.agent: expected a table, got array`,
			`triage.toml:3: sandbox.reproducer: expected a table, got array of tables`,
		},
	},
	{
		name: "syntax error line",
		toml: "[project]\nname = \"x\"\n\n[sandbox]\nnetwork = false\nenv = [\"A\"]\nbackend = docker\n",
		want: []string{`triage.toml:7: syntax error: expected value but found "docker" instead; fix the TOML syntax`},
	},
	{
		name: "syntax error at end of line",
		toml: "[sandbox]\n[sandbox.agent\nnetwork = true\n",
		want: []string{`triage.toml:2: syntax error: expected '.' or ']' to end table name, but got '\n' instead; fix the TOML syntax`},
	},
	{
		name: "guard",
		toml: "[sandbox.guard]\nenabled = true\nmodle = \"m\"\nmin_safe = 1.5\nmax_risk = \"high\"\ntimeout = 0\n",
		want: []string{
			`triage.toml:3: sandbox.guard.modle: unknown key; did you mean "model"?`,
			`triage.toml:4: sandbox.guard.min_safe: must be between 0 and 1, got 1.5`,
			`triage.toml:5: sandbox.guard.max_risk: expected a number, got string "high"`,
			`triage.toml:6: sandbox.guard.timeout: must be between 1 and 86400 seconds (24 hours), got 0`,
		},
	},
	{
		name: "mcp",
		toml: "[sandbox.mcp]\nmax_sessions = 0\nmax_starting = 17\nmax_session = 2\n[sandbox.agent.mcp]\nmax_sessions = 2\n",
		want: []string{
			`triage.toml:2: sandbox.mcp.max_sessions: must be between 1 and 64, got 0; e.g. max_sessions = 4`,
			`triage.toml:3: sandbox.mcp.max_starting: must be between 1 and 16, got 17; e.g. max_starting = 2`,
			`triage.toml:4: sandbox.mcp.max_session: unknown key; did you mean "max_sessions"?`,
			`triage.toml:5: sandbox.agent.mcp: nested table not allowed in [sandbox.agent]; move it to [sandbox.mcp]`,
		},
	},
	{
		name: "env patterns, set_env names, user",
		toml: "[sandbox]\nenv = [\"OK_1\", \"LC_[A-Z]*\", \"FOO BAR\", \"X[\"]\n" +
			"set_env = { LLMFORMAT = \"1\", 1X = \"a\", N = 2 }\nuser = \"0:1000\"\n" +
			"[sandbox.agent]\nuser = \"me\"\n[sandbox.reproducer]\nuser = \"1000:-1\"\n",
		want: []string{
			`triage.toml:2: sandbox.env: item 3: "FOO BAR" is not a variable name or wildcard pattern; use letters, digits, _ and the wildcards * ? [...]`,
			`triage.toml:2: sandbox.env: item 4: "X[" is not a variable name or wildcard pattern; use letters, digits, _ and the wildcards * ? [...]`,
			`triage.toml:3: sandbox.set_env.1X: "1X" is not a valid variable name; use letters, digits and _, not starting with a digit`,
			`triage.toml:3: sandbox.set_env.N: expected a string, got integer 2`,
			`triage.toml:4: sandbox.user: uid 0 (root) is not allowed; write it as "uid:gid" with a non-root uid, e.g. "1000:1000"`,
			`triage.toml:6: sandbox.agent.user: "me" is not of the form "uid:gid"; write it as "uid:gid" with a non-root uid, e.g. "1000:1000"`,
			`triage.toml:8: sandbox.reproducer.user: "1000:-1": uid and gid must be non-negative integers; write it as "uid:gid" with a non-root uid, e.g. "1000:1000"`,
		},
	},
	{
		name: "numbers out of range",
		toml: "[sandbox]\ncpus = 0\ntimeout = -5\npids = 0\nimage = \"\"\n",
		want: []string{
			`triage.toml:2: sandbox.cpus: must be between 0.01 and 4096, got 0; e.g. cpus = 1.5`,
			`triage.toml:3: sandbox.timeout: must be between 1 and 86400 seconds (24 hours), got -5`,
			`triage.toml:4: sandbox.pids: must be between 8 and 4194304, got 0; e.g. pids = 256`,
			`triage.toml:5: sandbox.image: must not be empty; name a docker image or remove the key`,
		},
	},
	{
		name: "dotted and quoted keys at the root",
		toml: "# comment\nsandbox.netwrk = false\n\"sandbox\".'agent'.\"writeable\" = []\n",
		want: []string{
			`triage.toml:2: sandbox.netwrk: unknown key; did you mean "network"?`,
			`triage.toml:3: sandbox.agent.writeable: unknown key; did you mean "writable"?`,
		},
	},
	{
		name: "inline tables",
		toml: "[sandbox]\nnetwork = false\nguard = { enabled = true,\n  modell = \"m\" }\nagent = { imag = \"x\" }\n",
		want: []string{
			`triage.toml:4: sandbox.guard.modell: unknown key; did you mean "model"?`,
			`triage.toml:5: sandbox.agent.imag: unknown key; did you mean "image"?`,
		},
	},
	{
		name: "strings and arrays that look like keys do not move lines",
		toml: "[labels]\nnote = \"\"\"\n[sandbox]\nnetwrk = 1\n\"\"\"\nlist = [\n  \"[sandbox]\", # netwrk = 2\n]\n[sandbox]\nnetwrk = 3\n",
		want: []string{`triage.toml:10: sandbox.netwrk: unknown key; did you mean "network"?`},
	},
	{
		name: "kubernetes_api that is neither pods nor agent-sandbox",
		toml: "[sandbox]\nnamespace = \"triage\"\nkubernetes_api = \"sandboxes\"\n",
		want: []string{`triage.toml:3: sandbox.kubernetes_api: "sandboxes" is not one of "pods", "agent-sandbox"; write one of "pods", "agent-sandbox"`},
	},
	{
		name: "sandbox that is not a table",
		toml: "sandbox = \"docker\"\nproject = 1\n",
		want: []string{
			`triage.toml:1: sandbox: expected a table, got string "docker"`,
			`triage.toml:2: project: expected a table, got integer 1`,
		},
	},
}

func TestProblems(t *testing.T) {
	for _, tt := range problemTests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Options{Backends: []string{"docker", "oci", "seatbelt", "local"}}.Parse("triage.toml", []byte(tt.toml), "/ws")
			if err == nil {
				t.Fatalf("Parse succeeded (%+v), want %d problems", f, len(tt.want))
			}
			if f != nil {
				t.Errorf("Parse returned a File with an error")
			}
			got := strings.Split(err.Error(), "\n")
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if n := len(Problems(err)); n != len(got) {
				t.Errorf("Problems(err) has %d entries for %d lines", n, len(got))
			}
		})
	}
}

func TestAccepted(t *testing.T) {
	tests := []struct {
		name  string
		toml  string
		check func(t *testing.T, f *File)
	}{
		{
			name: "harness sections are ignored whatever they hold",
			toml: "[project]\nname = 5\ncheckout = \"co\"\n[repro]\nbrowse = [1]\n[labels]\nx = {y = [1, \"a\"]}\n" +
				"[[agents.list]]\nz = 1\n[agents.modes.triage]\nsteps = 150\n" +
				"top = 1\n",
			check: func(t *testing.T, f *File) {
				if f.Project.Checkout != "co" {
					t.Errorf("Checkout = %q", f.Project.Checkout)
				}
			},
		},
		{
			name: "every sandbox key",
			toml: `[sandbox]
backend = "docker"
network = true
image = "img:1"
env = ["A", "B_*", "LC_[A-Z]?"]
secrets = ["~/.ssh"]
writable = ["out", "./a/b", "."]
allow_all = false
set_env = { LLMFORMAT = "1" }
timeout = 30
memory = "2g"
cpus = 1.5
pids = 256
tmpfs_size = 67108864
shm_size = "64KiB"
runtime = "runsc"
user = "1000:1000"
output_limit = "1MB"
deny = ["rm -rf *"]
audit_log = ".triage/audit.jsonl"
[sandbox.agent]
cpus = 2
[sandbox.agent.set_env]
X = "y"
[sandbox.guard]
url = "http://127.0.0.1:8080"
timeout = 5
min_safe = 0
max_risk = 1
`,
			check: func(t *testing.T, f *File) {
				want := Sandbox{
					Backend: ptr("docker"), Network: &Network{On: true}, Image: ptr("img:1"),
					Env: []string{"A", "B_*", "LC_[A-Z]?"}, Secrets: []string{"~/.ssh"}, Writable: []string{"out", "./a/b", "."},
					AllowAll: ptr(false), SetEnv: map[string]string{"LLMFORMAT": "1"}, Timeout: ptr(30),
					Memory: ptr[int64](2 << 30), CPUs: ptr(1.5), Pids: ptr[int64](256), TmpfsSize: ptr[int64](64 << 20),
					ShmSize: ptr[int64](64 << 10), Runtime: ptr("runsc"), User: ptr("1000:1000"), OutputLimit: ptr[int64](1 << 20),
					Deny: []string{"rm -rf *"}, AuditLog: ptr(".triage/audit.jsonl"),
				}
				if !reflect.DeepEqual(f.Sandbox, want) {
					t.Errorf("Sandbox = %+v, want %+v", f.Sandbox, want)
				}
				if want := (Sandbox{CPUs: ptr(2.0), SetEnv: map[string]string{"X": "y"}}); !reflect.DeepEqual(f.Agent, want) {
					t.Errorf("Agent = %+v, want %+v", f.Agent, want)
				}
				if want := (Guard{URL: ptr("http://127.0.0.1:8080"), Timeout: ptr(5), MinSafe: ptr(0.0), MaxRisk: ptr(1.0)}); !reflect.DeepEqual(f.Guard, want) {
					t.Errorf("Guard = %+v, want %+v", f.Guard, want)
				}
			},
		},
		{
			name: "empty arrays are set, not unset",
			toml: "[sandbox.agent]\nwritable = []\nset_env = {}\naccept_weaker = []\n",
			check: func(t *testing.T, f *File) {
				if f.Agent.Writable == nil || len(f.Agent.Writable) != 0 || f.Agent.SetEnv == nil || f.Agent.AcceptWeaker == nil {
					t.Errorf("Agent = %+v, want empty but set Writable, SetEnv and AcceptWeaker", f.Agent)
				}
			},
		},
		{
			name: "empty file",
			toml: "",
			check: func(t *testing.T, f *File) {
				if f.Root != "/ws" || f.Path != "triage.toml" {
					t.Errorf("File = %+v", f)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("triage.toml", []byte(tt.toml), "/ws")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.check(t, f)
		})
	}
}

func TestProblemFields(t *testing.T) {
	_, err := Parse("dir/triage.toml", []byte("[sandbox]\n\nnetwrk = 1\n"), "/ws")
	ps := Problems(err)
	if len(ps) != 1 {
		t.Fatalf("Problems = %v, want one", ps)
	}
	want := Problem{File: "dir/triage.toml", Line: 3, Key: "sandbox.netwrk", Msg: "unknown key", Hint: `did you mean "network"?`}
	if *ps[0] != want {
		t.Errorf("Problem = %+v, want %+v", *ps[0], want)
	}
}

func TestProblemError(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "triage.toml", Line: 34, Key: "sandbox.netwrk", Msg: "unknown key", Hint: `did you mean "network"?`},
			`triage.toml:34: sandbox.netwrk: unknown key; did you mean "network"?`},
		{Problem{File: "t.toml", Msg: "open t.toml: no such file"}, "t.toml: open t.toml: no such file"},
		{Problem{Line: 2, Msg: "m"}, ":2: m"},
		{Problem{Msg: "m"}, "m"},
		{Problem{File: "a\nb", Key: "k\r", Msg: "x\ny", Hint: "h\u2028"}, `a\nb: k\r: x\ny; h\u2028`},
		{Problem{}, "invalid"},
	}
	for _, tt := range tests {
		if got := tt.p.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestLoadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triage.toml")
	_, err := Load(path)
	if err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v is not fs.ErrNotExist", err)
	}
	ps := Problems(err)
	if len(ps) != 1 || ps[0].File != path || ps[0].Hint != "create it or pass --config" ||
		!strings.HasPrefix(ps[0].Msg, "open "+path+": no such file") {
		t.Errorf("problem = %+v", ps)
	}
}

func TestLoadRelative(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "triage.toml"), []byte("[sandbox]\nnetwrk = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	_, err := Load("triage.toml")
	if want := `triage.toml:2: sandbox.netwrk: unknown key; did you mean "network"?`; err == nil || err.Error() != want {
		t.Errorf("Load error = %v, want %s (path as given)", err, want)
	}
	if err := os.WriteFile("triage.toml", []byte("[sandbox]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load("triage.toml")
	if err != nil {
		t.Fatal(err)
	}
	// t.TempDir may sit behind a symlink (macOS /var); Root is the cleaned
	// absolute directory, not the resolved one.
	wd, _ := os.Getwd()
	if f.Root != wd || f.Path != filepath.Join(wd, "triage.toml") {
		t.Errorf("Root, Path = %q, %q; want %q", f.Root, f.Path, wd)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b", "c")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory with the name is not a config file.
	if err := os.Mkdir(filepath.Join(dir, "a", "b", "triage.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if ancestor := findAbove(dir); ancestor != "" {
		t.Skipf("%s exists above the temp dir", ancestor)
	}

	got, err := Find(sub)
	if err != nil || got != "" {
		t.Errorf("Find with no file = %q, %v; want \"\"", got, err)
	}

	want := filepath.Join(dir, "a", "triage.toml")
	if err := os.WriteFile(want, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{sub, filepath.Join(dir, "a")} {
		if got, err := Find(start); err != nil || got != want {
			t.Errorf("Find(%s) = %q, %v; want %q", start, got, err, want)
		}
	}
	if _, err := Find(filepath.Join(dir, "nope")); err == nil {
		t.Error("Find of a missing directory succeeded")
	}
	if _, err := Find(want); err == nil {
		t.Error("Find of a file succeeded")
	}
}

// findAbove reports a triage.toml in a parent of dir, which would make the
// "nothing found" case of TestFind meaningless.
func findAbove(dir string) string {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		p := filepath.Join(d, FileName)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func TestDefault(t *testing.T) {
	f := Default("some/../dir")
	wd, _ := os.Getwd()
	if f.Root != filepath.Join(wd, "dir") || f.Path != "" {
		t.Errorf("Default = %+v", f)
	}
	if want := (File{Root: f.Root}); f.Path != want.Path || f.Project != want.Project ||
		f.Repro != want.Repro || !reflect.DeepEqual(f.Guard, want.Guard) || !isZero(f.Sandbox) || !isZero(f.Agent) || !isZero(f.Reproducer) {
		t.Errorf("Default has something set: %+v", f)
	}
	if r := Default("/").Resolve("agent"); !isZero(r) {
		t.Errorf("Default Resolve = %+v, want all unset", r)
	}
}

func isZero(s Sandbox) bool { return reflect.DeepEqual(s, Sandbox{}) }

func ptr[T any](v T) *T { return &v }
