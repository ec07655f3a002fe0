package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// The MCP TypeScript SDK's client drives the real server in these tests:
// a client nobody here wrote.
const (
	mcpSDK        = "@modelcontextprotocol/sdk"
	mcpSDKVersion = "1.32.2"
)

// mcpStep is one line the client script printed.
type mcpStep struct {
	Step    string `json:"step"`
	IsError bool   `json:"isError"`
	Text    string `json:"text"`
	Result  *struct {
		ExitCode int    `json:"exit_code"`
		TimedOut bool   `json:"timed_out"`
		Stdout   string `json:"stdout"`
		Error    string `json:"error"`
		Role     string `json:"role"`
		Ended    bool   `json:"ended"`
		Gate     struct {
			Verdict, Rule string
		} `json:"gate"`
	} `json:"result"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	PID     int    `json:"pid"`
	Message string `json:"message"`
}

// mcpClient starts the client script on a workspace; lines delivers what it prints.
func mcpClient(t *testing.T, root, scenario, token string) (*exec.Cmd, <-chan mcpStep) {
	t.Helper()
	sdk := testenv.NPMPackage(t, mcpSDK, mcpSDKVersion)
	script, err := filepath.Abs(filepath.Join("testdata", "mcp_client.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script, sdk, testenv.Binary(t), root, scenario, token)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	steps := make(chan mcpStep, 16)
	go func() {
		defer close(steps)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var s mcpStep
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				s = mcpStep{Step: "unreadable", Message: sc.Text()}
			}
			steps <- s
		}
	}()
	return cmd, steps
}

// TestMCPWithTheTypeScriptClient: the SDK's client lists the tools, runs
// python3 in the reproducer role, gets git push denied as a result, a
// timeout as a timeout, and a file kept in a session's HOME across calls.
func TestMCPWithTheTypeScriptClient(t *testing.T) {
	testenv.RequireDocker(t)
	root := workspace(t, "")
	_, steps := mcpClient(t, root, "main", "")
	got := map[string]mcpStep{}
	deadline := time.After(4 * time.Minute)
	for done := false; !done; {
		select {
		case s, ok := <-steps:
			if !ok || s.Step == "done" {
				done = true
				break
			}
			if s.Step == "error" || s.Step == "unreadable" {
				t.Fatalf("the client failed: %s", s.Message)
			}
			got[s.Step] = s
		case <-deadline:
			t.Fatal("the client did not finish in 4 minutes")
		}
	}
	var names []string
	for _, tool := range got["tools"].Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "check,end_session,run" {
		t.Errorf("tools = %v", names)
	}
	checks := []struct {
		step string
		ok   func(s mcpStep) bool
	}{
		{"python", func(s mcpStep) bool {
			return !s.IsError && s.Result.ExitCode == 0 && s.Result.Stdout == "1\n" && s.Result.Role == "reproducer"
		}},
		{"push", func(s mcpStep) bool {
			return s.IsError && s.Result.ExitCode == 125 && s.Result.Gate.Verdict == "deny" &&
				strings.Contains(s.Text, "Do not retry it in another form")
		}},
		{"timeout", func(s mcpStep) bool { return s.Result.TimedOut && s.Result.ExitCode == 124 && !s.IsError }},
		{"write", func(s mcpStep) bool { return !s.IsError && s.Result.ExitCode == 0 }},
		{"read", func(s mcpStep) bool { return s.Result.ExitCode == 0 && s.Result.Stdout == "kept-in-home\n" }},
		{"other", func(s mcpStep) bool { return s.Result.ExitCode != 0 && s.Result.Stdout == "" }},
		{"end", func(s mcpStep) bool { return s.Result.Ended }},
		{"after", func(s mcpStep) bool { return s.Result.ExitCode != 0 && s.Result.Stdout == "" }},
	}
	for _, c := range checks {
		s, ok := got[c.step]
		if !ok || s.Result == nil || !c.ok(s) {
			raw, _ := json.Marshal(s)
			t.Errorf("%s: %s", c.step, raw)
		}
	}
}

// TestMCPServerKilledLeavesNothing: kill -9 of the server while a session
// command and a reproducer run leaves no container and no process.
func TestMCPServerKilledLeavesNothing(t *testing.T) {
	testenv.RequireDocker(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	root := workspace(t, "")
	token := "mcp-killed-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, steps := mcpClient(t, root, "kill", token)
	var pid int
	select {
	case s := <-steps:
		if s.Step != "server" || s.PID <= 0 {
			t.Fatalf("want the server's pid first, got %+v", s)
		}
		pid = s.PID
	case <-time.After(2 * time.Minute):
		t.Fatal("the client did not start the server")
	}
	// Both commands run: each one's shell shows the token (a supervisor
	// process may too, unless it is resident in the holder).
	if !testenv.Eventually(60*time.Second, func() bool {
		return len(processesWith(token, pid)) >= 2 && len(containersOf(t, cli, pid)) == 2
	}) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the commands never started: processes %v, containers %v", processesWith(token, pid), containersOf(t, cli, pid))
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if !testenv.Eventually(20*time.Second, func() bool {
		return len(containersOf(t, cli, pid)) == 0 && len(processesWith(token, pid)) == 0
	}) {
		t.Fatalf("left behind after kill -9 of the server: containers %v, processes %v", containersOf(t, cli, pid), processesWith(token, pid))
	}
	t.Logf("kill -9 of the server mid-command: nothing left after %v", time.Since(start).Round(time.Millisecond))
}
