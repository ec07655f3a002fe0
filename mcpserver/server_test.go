package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/runreport"
)

// fixture is a server on a fresh workspace whose config chooses the fake
// backend, with a client connected in memory.
type fixture struct {
	srv     *Server
	fake    *backendtest.Backend
	client  *mcp.ClientSession
	root    string
	backend string
}

func newFixture(t *testing.T, fake *backendtest.Backend, toml string) *fixture {
	t.Helper()
	f := newFixtureOn(t, fake, toml)
	f.fake = fake
	return f
}

// newFixtureOn is newFixture on any backend (fake is then nil).
func newFixtureOn(t *testing.T, fake backends.Backend, toml string) *fixture {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "triage.toml"), []byte("[sandbox]\nbackend = \"fake\"\nconfirm = [\"make deploy*\"]\n"+toml), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := backends.NewRegistry()
	reg.Register(backends.Entry{Name: "fake", Capabilities: fake.Capabilities, New: func(backends.Env) (backends.Backend, error) { return fake, nil }})
	host := policy.Host{Home: t.TempDir(), UID: 1000, GID: 1000, OS: "linux", Cwd: root,
		Env: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{root: root}
	srv, err := New(ctx, Options{Registry: reg, Host: host, Version: "test",
		NewBackend: func(p *policy.Policy) (backends.Backend, error) {
			f.backend = p.Backend
			return reg.New(p.Backend, backends.Env{})
		}})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.client = cs
	t.Cleanup(func() { cs.Close(); ss.Close(); srv.Close() })
	return f
}

// call calls a tool; a protocol error fails the test (refusals are results).
func (f *fixture) call(t *testing.T, tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := f.client.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error %v; refusals must be tool results", tool, args, err)
	}
	var out map[string]any
	if res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(raw, &out)
	}
	return res, out
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsDocumentTheirInput(t *testing.T) {
	f := newFixture(t, backendtest.New(), "")
	res, err := f.client.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ToolRun: true, ToolCheck: true, ToolEndSession: true}
	for _, tool := range res.Tools {
		delete(want, tool.Name)
		raw, _ := json.Marshal(tool.InputSchema)
		var sch struct {
			Properties           map[string]struct{ Description string } `json:"properties"`
			AdditionalProperties *bool                                   `json:"additionalProperties"`
		}
		if err := json.Unmarshal(raw, &sch); err != nil {
			t.Fatal(err)
		}
		if len(sch.Properties) == 0 || sch.AdditionalProperties == nil || *sch.AdditionalProperties {
			t.Errorf("%s: want a closed object schema, got %s", tool.Name, raw)
		}
		for name, p := range sch.Properties {
			if p.Description == "" {
				t.Errorf("%s: input field %s has no description", tool.Name, name)
			}
		}
		if tool.Description == "" || tool.OutputSchema == nil {
			t.Errorf("%s: want a description and an output schema", tool.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("tools missing: %v", want)
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		sandbox  func() *backendtest.Sandbox
		args     map[string]any
		isError  bool
		code     float64
		text     []string
		execs    int
		wantArgv []string
	}{
		{name: "argv in the reproducer role", sandbox: func() *backendtest.Sandbox { return &backendtest.Sandbox{Stdout: "1\n"} },
			args: map[string]any{"argv": []string{"python3", "-c", "print(1)"}, "role": "reproducer"},
			code: 0, text: []string{"exit 0", "--- stdout ---\n1"}, execs: 1, wantArgv: []string{"python3", "-c", "print(1)"}},
		{name: "ids are shown as printed, changed lines counted", sandbox: func() *backendtest.Sandbox {
			return &backendtest.Sandbox{Stdout: "tests/x.py::test_y[a b] PASSED\n::1 localhost\n::add-mask::x\n"}
		},
			args: map[string]any{"argv": []string{"pytest", "-v"}},
			code: 0, text: []string{"--- stdout (1 line changed to be shown safely", "every other line is as printed) ---\ntests/x.py::test_y[a b] PASSED\n::1 localhost\n[workflow command neutralised] ::add-mask::x"},
			execs: 1},
		{name: "one shell line", sandbox: func() *backendtest.Sandbox { return &backendtest.Sandbox{Stdout: "a\n"} },
			args: map[string]any{"command": "echo a | cat"},
			code: 0, text: []string{"exit 0"}, execs: 1, wantArgv: []string{"sh", "-c", "echo a | cat"}},
		{name: "a failing command is a result, not an error", sandbox: func() *backendtest.Sandbox {
			return &backendtest.Sandbox{Stderr: "boom\n", Result: backends.Result{ExitCode: 3}}
		},
			args: map[string]any{"argv": []string{"false"}}, code: 3, text: []string{"exit 3", "boom"}, execs: 1},
		{name: "a timeout is a timeout", sandbox: func() *backendtest.Sandbox {
			return &backendtest.Sandbox{Result: backends.Result{TimedOut: true, ExitCode: 137}}
		},
			args: map[string]any{"argv": []string{"sleep", "30"}, "timeout_seconds": 1},
			code: exitcode.Timeout, text: []string{"TIMED OUT", "hint: the agent role's timeout is [sandbox.agent] timeout", "timeout_seconds can only shorten it"}, execs: 1},
		{name: "a reproducer's timeout names [repro] timeout", sandbox: func() *backendtest.Sandbox {
			return &backendtest.Sandbox{Result: backends.Result{TimedOut: true, ExitCode: 137}}
		},
			args: map[string]any{"argv": []string{"sleep", "30"}, "role": "reproducer"},
			code: exitcode.Timeout, text: []string{"TIMED OUT", "hint: the reproducer role's timeout is [repro] timeout in "}, execs: 1},
		{name: "denied by the gate", args: map[string]any{"command": "git push origin main"}, isError: true,
			code: exitcode.Refused, text: []string{"DENIED", "git-remote", "Do not retry it in another form"}},
		{name: "a confirm rule has nobody to ask", args: map[string]any{"argv": []string{"make", "deploy"}}, isError: true,
			code: exitcode.Refused, text: []string{"NOT RUN", "nobody confirmed it", "Do not retry"}},
		{name: "argv and command both", args: map[string]any{"argv": []string{"true"}, "command": "true"}, isError: true,
			code: exitcode.Refused, text: []string{"not both"}},
		{name: "no command", args: map[string]any{}, isError: true, code: exitcode.Refused, text: []string{"empty command"}},
		{name: "unknown role", args: map[string]any{"argv": []string{"true"}, "role": "root"}, isError: true},
		{name: "timeout above the role's", args: map[string]any{"argv": []string{"true"}, "role": "reproducer", "timeout_seconds": 301},
			isError: true, code: exitcode.Refused, text: []string{"timeout_seconds 301", "reproducer role's timeout, 300"}},
		{name: "a reproducer has no session", args: map[string]any{"argv": []string{"true"}, "role": "reproducer", "session": "s1"},
			isError: true, code: exitcode.Refused, text: []string{"sessions are for the agent role"}},
		{name: "the agent cannot choose the backend", args: map[string]any{"argv": []string{"true"}, "backend": "local"}, isError: true},
		{name: "nor open the network", args: map[string]any{"argv": []string{"true"}, "network": true}, isError: true},
		{name: "a workdir outside the sandbox", args: map[string]any{"argv": []string{"true"}, "workdir": "/etc"},
			isError: true, code: exitcode.Refused, text: []string{"not a directory visible in the sandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := &backendtest.Sandbox{}
			if tt.sandbox != nil {
				sb = tt.sandbox()
			}
			fake := backendtest.NewShared(sb)
			f := newFixture(t, fake, "")
			res, out := f.call(t, ToolRun, tt.args)
			txt := textOf(res)
			if res.IsError != tt.isError {
				t.Fatalf("isError = %v, want %v: %s", res.IsError, tt.isError, txt)
			}
			for _, w := range tt.text {
				if !strings.Contains(txt, w) {
					t.Errorf("text %q lacks %q", txt, w)
				}
			}
			if out != nil && out["exit_code"] != tt.code {
				t.Errorf("exit_code = %v, want %v", out["exit_code"], tt.code)
			}
			if len(tt.text) > 0 && out == nil {
				t.Errorf("no structured result: %s", txt)
			}
			execs := sb.Execs()
			if len(execs) != tt.execs {
				t.Fatalf("ran %d commands, want %d", len(execs), tt.execs)
			}
			if tt.wantArgv != nil && strings.Join(execs[0].Argv, "\x00") != strings.Join(tt.wantArgv, "\x00") {
				t.Errorf("ran %q, want %q", execs[0].Argv, tt.wantArgv)
			}
			if n := len(fake.Open()); n != 0 {
				t.Errorf("%d sandboxes left open", n)
			}
		})
	}
}

func TestRunReportIsRunJSONs(t *testing.T) {
	f := newFixture(t, backendtest.NewShared(&backendtest.Sandbox{Stdout: "x\n"}), "")
	_, out := f.call(t, ToolRun, map[string]any{"argv": []string{"true"}})
	raw, _ := json.Marshal(out)
	var rep runreport.Report
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("the structured result is not run --json's object: %v", err)
	}
	if rep.Stdout != "x\n" || rep.Backend != "fake" || rep.Gate.Verdict != "allow" || rep.PolicyHash == "" {
		t.Errorf("report = %+v", rep)
	}
}

func TestCheck(t *testing.T) {
	fake := backendtest.New()
	f := newFixture(t, fake, "")
	for _, tt := range []struct {
		args    map[string]any
		verdict string
	}{
		{map[string]any{"command": "git push"}, "deny"},
		{map[string]any{"argv": []string{"python3", "-c", "print(1)"}}, "allow"},
		{map[string]any{"argv": []string{"make", "deploy"}}, "confirm"},
	} {
		res, out := f.call(t, ToolCheck, tt.args)
		if res.IsError || out["verdict"] != tt.verdict {
			t.Errorf("check %v: %v %s, want %s", tt.args, out["verdict"], textOf(res), tt.verdict)
		}
	}
	if fake.Starts() != 0 {
		t.Errorf("check started %d sandboxes", fake.Starts())
	}
}

func TestSessionKeepsItsSandboxUntilEnded(t *testing.T) {
	fake := backendtest.New()
	f := newFixture(t, fake, "")
	for i := 0; i < 3; i++ {
		if res, _ := f.call(t, ToolRun, map[string]any{"argv": []string{"true"}, "session": "s1"}); res.IsError {
			t.Fatal(textOf(res))
		}
	}
	f.call(t, ToolRun, map[string]any{"argv": []string{"true"}, "session": "s2"})
	if fake.Starts() != 2 || len(fake.Open()) != 2 {
		t.Fatalf("starts %d, open %d; want one sandbox per session", fake.Starts(), len(fake.Open()))
	}
	res, out := f.call(t, ToolEndSession, map[string]any{"session": "s1"})
	if out["ended"] != true || len(fake.Open()) != 1 {
		t.Fatalf("end_session: %s; open %d", textOf(res), len(fake.Open()))
	}
	if _, out := f.call(t, ToolEndSession, map[string]any{"session": "s1"}); out["ended"] != false {
		t.Errorf("ending it twice: %v", out)
	}
	f.srv.Close()
	if len(fake.Open()) != 0 {
		t.Errorf("the server's end left %d sandboxes", len(fake.Open()))
	}
}

// TestSessionKeepsItsSandboxAcrossWorkdirs: the working directory is the
// command's, not the sandbox's, so a session's HOME outlives a cd.
func TestSessionKeepsItsSandboxAcrossWorkdirs(t *testing.T) {
	sb := &backendtest.Sandbox{}
	fake := backendtest.NewShared(sb)
	f := newFixture(t, fake, "")
	if err := os.Mkdir(filepath.Join(f.root, "issues"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.call(t, ToolRun, map[string]any{"argv": []string{"true"}, "session": "s"})
	res, _ := f.call(t, ToolRun, map[string]any{"argv": []string{"true"}, "session": "s", "workdir": "issues"})
	execs := sb.Execs()
	if fake.Starts() != 1 || len(execs) != 2 || execs[1].Workdir != filepath.Join(f.root, "issues") {
		t.Errorf("starts %d, execs %+v: %s", fake.Starts(), execs, textOf(res))
	}
}

func TestConcurrentCalls(t *testing.T) {
	fake := backendtest.New()
	f := newFixture(t, fake, "")
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := map[string]any{"argv": []string{"true"}}
			switch i % 3 {
			case 1:
				args["session"] = fmt.Sprintf("s%d", i%2)
			case 2:
				args["role"] = "reproducer"
			}
			res, err := f.client.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolRun, Arguments: args})
			if err != nil || res.IsError {
				t.Errorf("call %d: %v %v", i, err, res)
			}
		}()
	}
	wg.Wait()
	f.srv.Close()
	if len(fake.Open()) != 0 {
		t.Errorf("%d sandboxes left open", len(fake.Open()))
	}
}

func TestBadConfigStopsTheServer(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "triage.toml"), []byte("[sandbox]\nnetwrk = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := backends.NewRegistry()
	_, err := New(context.Background(), Options{Registry: reg, Host: policy.Host{Home: t.TempDir(), Cwd: root, OS: "linux"},
		NewBackend: func(*policy.Policy) (backends.Backend, error) { return nil, nil }})
	if err == nil || !strings.Contains(err.Error(), "netwrk") {
		t.Errorf("err = %v, want the unknown key named", err)
	}
}

// TestSessionKeepsItsSandboxWhenFilesAppear: files that appear at the
// workspace root (a conflict file beside NOTES.md, which triage-sandbox
// writes itself) or in a writable path keep the session's sandbox
// (policy's TestWarmHashIgnoresListedEntries has what still ends it).
func TestSessionKeepsItsSandboxWhenFilesAppear(t *testing.T) {
	fake := backendtest.NewShared(&backendtest.Sandbox{})
	f := newFixture(t, fake, "")
	f.call(t, ToolRun, map[string]any{"argv": []string{"true"}, "session": "s"})
	for _, name := range []string{"NOTES.md.from-sandbox-20261206T003000-1a2b3c", "dropped.txt", "issues/34.md"} {
		full := filepath.Join(f.root, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, _ := f.call(t, ToolRun, map[string]any{"argv": []string{"true"}, "session": "s"})
	if fake.Starts() != 1 || strings.Contains(textOf(res), "policy changed") {
		t.Fatalf("files at the root ended the session: starts %d: %s", fake.Starts(), textOf(res))
	}
}
