package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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
	cmd, steps, _ := mcpClientIn(t, root, scenario, token, false)
	return cmd, steps
}

// mcpClientIn is mcpClient with a pipe to the script's stdin when withIn
// is set (a scenario waits for a line there before it goes on).
func mcpClientIn(t *testing.T, root, scenario, token string, withIn bool) (*exec.Cmd, <-chan mcpStep, io.WriteCloser) {
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
	var stdin io.WriteCloser
	if withIn {
		if stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
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
	return cmd, steps, stdin
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

// TestMCPSessionsBounded: with max_sessions = 2, the SDK's client starts
// sessions a, b and c at once: two sandboxes start and one name is
// refused with the bound, the live names and end_session; ending one
// lets the refused name start; warm_idle ends both without a call; and
// nothing is left when the client goes.
func TestMCPSessionsBounded(t *testing.T) {
	testenv.RequireDocker(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	const idle = 20 * time.Second
	root := workspace(t, fmt.Sprintf("[sandbox]\nwarm_idle = %d\n[sandbox.mcp]\nmax_sessions = 2\n", int(idle.Seconds())))
	cmd, steps, stdin := mcpClientIn(t, root, "bound", "", true)
	next := func(want string) mcpStep {
		t.Helper()
		select {
		case s, ok := <-steps:
			if !ok || s.Step != want {
				raw, _ := json.Marshal(s)
				t.Fatalf("want step %s, got %s", want, raw)
			}
			return s
		case <-time.After(4 * time.Minute):
			t.Fatalf("no step %s in 4 minutes", want)
		}
		return mcpStep{}
	}
	pid := next("server").PID
	var live, refused []string
	for _, n := range []string{"a", "b", "c"} {
		s := next("start-" + n)
		switch {
		case !s.IsError && s.Result != nil && s.Result.ExitCode == 0:
			live = append(live, n)
		case s.IsError && s.Result != nil && s.Result.ExitCode == 125 &&
			strings.Contains(s.Text, "at most 2 sessions") && strings.Contains(s.Text, "[sandbox.mcp] max_sessions") &&
			strings.Contains(s.Text, "end_session"):
			refused = append(refused, n)
		default:
			raw, _ := json.Marshal(s)
			t.Fatalf("session %s: %s", n, raw)
		}
	}
	next("started")
	if len(live) != 2 || len(refused) != 1 {
		t.Fatalf("live %v, refused %v; want two and one", live, refused)
	}
	if got := containersOf(t, cli, pid); len(got) != 2 {
		t.Fatalf("%d containers for 2 sessions: %v", len(got), got)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	if s := next("end"); s.Result == nil || !s.Result.Ended {
		raw, _ := json.Marshal(s)
		t.Fatalf("end_session: %s", raw)
	}
	if s := next("retry"); s.IsError || s.Result == nil || s.Result.ExitCode != 0 {
		raw, _ := json.Marshal(s)
		t.Fatalf("the refused name after end_session: %s", raw)
	}
	// One of the first two may have idled out meanwhile on a slow machine.
	if got := containersOf(t, cli, pid); len(got) < 1 || len(got) > 2 {
		t.Fatalf("%d containers after ending one and starting one: %v", len(got), got)
	}
	// Nobody calls: both sessions end after warm_idle (plus a tenth).
	begin := time.Now()
	if !testenv.Eventually(idle+30*time.Second, func() bool { return len(containersOf(t, cli, pid)) == 0 }) {
		t.Fatalf("idle sessions still hold %v after %v (warm_idle %v)", containersOf(t, cli, pid), time.Since(begin), idle)
	}
	t.Logf("idle sessions gone %v after their last command (warm_idle %v)", time.Since(begin).Round(time.Second), idle)
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	next("done")
	if err := cmd.Wait(); err != nil {
		t.Errorf("the client: %v", err)
	}
	if !testenv.Eventually(20*time.Second, func() bool { return syscall.Kill(pid, 0) != nil && len(containersOf(t, cli, pid)) == 0 }) {
		t.Errorf("after the client went: server alive %v, containers %v", syscall.Kill(pid, 0) == nil, containersOf(t, cli, pid))
	}
}
