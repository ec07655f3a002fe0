package docker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/mcpserver"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/runreport"
)

// TestPytestNodeIDRoundTrip is issue 34's "a pytest id printed by a run
// can be passed back unchanged and runs that test", as an agent does it:
// through the MCP server's run tool on docker, the reproducer role runs
// the real pytest of the minicalc fixture, the agent reads the node ids
// it printed (`--collect-only -q` and `-v`: "::", brackets, spaces and
// parentheses in them), passes each back as the argument of another run,
// and exactly that test runs.
func TestPytestNodeIDRoundTrip(t *testing.T) {
	testenv.RequireDocker(t)
	base := pytestBase(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	checkout, ws, venv := filepath.Join(dir, "minicalc"), filepath.Join(dir, "ws"), filepath.Join(dir, "venv")
	sh(t, "", "cp", "-r", "testdata/minicalc", checkout)
	sh(t, "", base, "-m", "venv", "--without-pip", venv)
	site, _ := filepath.Glob(filepath.Join(venv, "lib", "python3.*", "site-packages"))
	if len(site) != 1 {
		t.Fatalf("venv site-packages: %v", site)
	}
	for _, m := range pytestModules {
		sh(t, "", "cp", "-r", filepath.Join(debianPackages, m), site[0])
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	toml := "[project]\ncheckout = \"../minicalc\"\npython = \"" + filepath.Join(venv, "bin", "python") + "\"\n[sandbox]\ntoolchain = \"image\"\n"
	if err := os.WriteFile(filepath.Join(ws, "triage.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := newMCPClient(t, ws)
	pytest := []string{"python", "-m", "pytest", "-p", "no:cacheprovider"}

	// The ids as pytest prints them.
	collect, text := agent.run(t, checkout, append(pytest, "--collect-only", "-q")...)
	collected := nodeIDs(collect.Stdout)
	const paramID = "tests/test_calc.py::test_evaluate[2 * (3 + 4)-14]"
	if collect.ExitCode != 0 || !hasID(collected, paramID) {
		t.Fatalf("--collect-only: exit %d, ids %q\n%s", collect.ExitCode, collected, text)
	}
	rep, text := agent.run(t, checkout, append(pytest, "-v")...)
	verbose := regexp.MustCompile(`(?m)^(tests/\S+::\S+?(?:\[[^\]]*\])?) PASSED`).FindAllStringSubmatch(rep.Stdout, -1)
	if rep.ExitCode != 0 || len(verbose) < 2 {
		t.Fatalf("-v: exit %d, %d PASSED lines\n%s", rep.ExitCode, len(verbose), text)
	}
	for _, r := range []*runreport.Report{collect, rep} {
		if r.StdoutStats.ChangedLines != 0 {
			t.Errorf("pytest's output was changed (%d lines): %s", r.StdoutStats.ChangedLines, r.Stdout)
		}
	}
	// The text a model reads shows them as printed too.
	if !strings.Contains(text, "tests/test_calc.py::test_tokenize PASSED") {
		t.Errorf("the run's text lacks the id as printed:\n%s", text)
	}

	// Each passed back unchanged runs exactly that test.
	for _, id := range []string{paramID, "tests/test_calc.py::test_tokenize", verbose[len(verbose)-1][1]} {
		rep, text = agent.run(t, checkout, append(pytest, "-q", id)...)
		if rep.ExitCode != 0 || !strings.Contains(rep.Stdout, "1 passed") {
			t.Errorf("%q passed back: exit %d\n%s", id, rep.ExitCode, text)
		}
	}
}

// nodeIDs are the lines of `pytest --collect-only -q` that name a test.
func nodeIDs(out string) []string {
	var ids []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "::") {
			ids = append(ids, l)
		}
	}
	return ids
}

func hasID(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// mcpClient is an MCP client connected in memory to a server for the
// workspace ws on the docker backend.
type mcpClient struct{ cs *mcp.ClientSession }

func newMCPClient(t *testing.T, ws string) *mcpClient {
	t.Helper()
	reg := builtin.Registry()
	host := currentHost(t)
	host.Cwd = ws
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env := backends.Env{SelfExe: testenv.Binary(t), InsideExe: testenv.InsideBinary(t)}
	srv, err := mcpserver.New(ctx, mcpserver.Options{Registry: reg, Host: host, Backend: "docker", Version: "test",
		NewBackend: func(p *policy.Policy) (backends.Backend, error) { return reg.New(p.Backend, env) }})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close(); srv.Close() })
	return &mcpClient{cs: cs}
}

// run calls the run tool in the reproducer role and returns its report
// and the text a model reads.
func (c *mcpClient) run(t *testing.T, workdir string, argv ...string) (*runreport.Report, string) {
	t.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolRun,
		Arguments: map[string]any{"argv": argv, "role": "reproducer", "workdir": workdir}})
	if err != nil {
		t.Fatalf("run %q: %v", argv, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var rep runreport.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("run %q: the structured result: %v\n%s", argv, err, text.String())
	}
	return &rep, text.String()
}
