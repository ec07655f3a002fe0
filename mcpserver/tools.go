package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/gate/confirm"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/runreport"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// Tool names.
const (
	ToolRun        = "run"
	ToolCheck      = "check"
	ToolEndSession = "end_session"
)

// CommandInput is the command a tool is about: an argv or one shell line.
type CommandInput struct {
	Argv    []string `json:"argv,omitempty" jsonschema:"the command as an argument vector, executed with no shell, e.g. [\"python3\", \"repro.py\"]; give argv or command, not both"`
	Command string   `json:"command,omitempty" jsonschema:"one shell command line, run as sh -c LINE (pipes, redirections, &&), e.g. \"pytest -x tests/test_calc.py 2>&1 | tail -20\"; give command or argv, not both"`
	Role    string   `json:"role,omitempty" jsonschema:"the sandbox role: agent (the default; the triage agent's own commands) or reproducer (an issue's reproducer: a fresh sandbox every run)"`
	Workdir string   `json:"workdir,omitempty" jsonschema:"directory to start in: absolute, or relative to the workspace root; it must be visible in the sandbox (default: the workspace root)"`
	Task    string   `json:"task,omitempty" jsonschema:"what you are working on, one line; shown to the guard model when the operator enabled one"`
}

// RunInput is the run tool's input.
type RunInput struct {
	CommandInput
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"kill the command (its whole process tree) after this many seconds; 0 or absent means the role's timeout, which is also the most you may ask for"`
	Session        string  `json:"session,omitempty" jsonschema:"agent role only: run in this named session's sandbox, started on first use; files in HOME and scratch persist between its commands until end_session, the server's end, or the operator's idle time without a command; how many sessions may run at once is in this tool's description (1-64 letters, digits, '.', '_' or '-')"`
}

// CheckOutput is the check tool's result.
type CheckOutput struct {
	sandbox.GateVerdict
	Command string `json:"command" jsonschema:"the command judged, quoted"`
	Message string `json:"message" jsonschema:"the verdict in one line; a denial says not to retry it in another form"`
}

// EndInput is the end_session tool's input.
type EndInput struct {
	Session string `json:"session" jsonschema:"the session to end; its sandbox and everything in it are removed"`
}

// EndOutput is the end_session tool's result.
type EndOutput struct {
	Ended   bool   `json:"ended" jsonschema:"a session of that name was running and is now gone"`
	Message string `json:"message" jsonschema:"what happened, in one line"`
}

func (s *Server) addTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolRun,
		Title: "Run a command in the sandbox",
		Description: "Run one command in a sandbox of the workspace " + s.cfg.Root + ": no network (loopback only), " +
			"no credentials, writes only to the role's writable paths. Returns the exit code (124 timed out, 125 refused), " +
			"the cleaned and capped stdout and stderr, the gate's verdict and hints about sandbox restrictions. " +
			"Output lines are byte for byte as the command printed them (a test id such as tests/x.py::test_y can be passed back as shown), " +
			"except lines changed to be safe to show (a workflow command marked, control characters escaped), which are counted in changed_lines. " +
			"A command the gate denies is not run; do not retry it in another form. " +
			fmt.Sprintf("At most %d sessions run at once: end one you no longer need with %s.", s.sessions.limits.maxSessions, ToolEndSession),
		InputSchema: inputSchema[RunInput](),
	}, s.run)
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolCheck,
		Title: "Ask the gate about a command",
		Description: "Judge a command as run would (the deny list, then the guard model when enabled) without running it. " +
			"verdict is allow, deny, or confirm (it needs an operator, and this server has none to ask: run denies it).",
		InputSchema: inputSchema[CommandInput](),
	}, s.check)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolEndSession,
		Title:       "End an agent session",
		Description: "End a named agent session: its sandbox, with everything in its HOME and scratch, is removed, and its place is free for a new session.",
	}, s.endSession)
}

// inputSchema is In's schema with role's allowed values spelt out.
func inputSchema[In any]() *jsonschema.Schema {
	sch, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the input schema of %T: %v", *new(In), err))
	}
	if r, ok := sch.Properties["role"]; ok {
		r.Enum = []any{string(profiles.RoleAgent), string(profiles.RoleReproducer)}
	}
	return sch
}

func (s *Server) run(ctx context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, *runreport.Report, error) {
	rep := runreport.New(nil)
	rep.Config = s.cfg.Path // also when no policy can be built from it
	argv, role, err := in.parse()
	if err != nil {
		return refused(rep, err)
	}
	p, err := s.policy(role, s.workdir(in.Workdir), in.Session)
	if err != nil {
		return refused(rep, err)
	}
	rep = runreport.New(p)
	timeout, err := in.timeout(p)
	if err != nil {
		return refused(rep, err)
	}
	var stdout, stderr bytes.Buffer
	req := sandbox.Request{
		Policy: p, Timeout: timeout, Command: backends.Command{Argv: argv, Workdir: p.Workdir},
		Streams:  backends.Streams{Stdout: &stdout, Stderr: &stderr},
		Redactor: output.NewRedactor(sandbox.Secrets(p, s.o.Host), output.DefaultRules()), Task: in.Task,
		// Confirm is nil: nobody here can say yes, so a confirm rule denies.
	}
	b, err := s.backend(p)
	if err != nil {
		return refused(rep, sandbox.RecordRefusal(req, err))
	}
	var res sandbox.Outcome
	if in.Session != "" {
		res, err = s.sessions.exec(ctx, s.base, b, req)
	} else {
		res, err = s.runOnce(ctx, b, req)
	}
	rep.SetOutcome(res, err, stdout.String(), stderr.String())
	if rep.TimedOut {
		rep.Hints = append(rep.Hints, output.Line(timeoutHint(p)))
	}
	return &mcp.CallToolResult{IsError: rep.Error != "", Content: text(summary(rep))}, rep, nil
}

// runOnce runs req in a sandbox of its own once a run slot is free (for
// the whole run) and then a start slot (freed when the sandbox is up, or
// the run ends).
func (s *Server) runOnce(ctx context.Context, b backends.Backend, req sandbox.Request) (sandbox.Outcome, error) {
	endRun, err := s.runs.take(ctx)
	if err != nil {
		return sandbox.Outcome{}, sandbox.RecordRefusal(req, fmt.Errorf("waiting for a run to end: %w", err))
	}
	defer endRun()
	release, err := s.starting.take(ctx)
	if err != nil {
		return sandbox.Outcome{}, sandbox.RecordRefusal(req, fmt.Errorf("waiting to start a sandbox: %w", err))
	}
	defer release()
	req.Started = release
	return sandbox.Run(ctx, b, req)
}

// refused is a run that did not start: a result the model reads.
func refused(rep *runreport.Report, err error) (*mcp.CallToolResult, *runreport.Report, error) {
	rep.Refused(err)
	return &mcp.CallToolResult{IsError: true, Content: text(summary(rep))}, rep, nil
}

func (s *Server) check(ctx context.Context, _ *mcp.CallToolRequest, in CommandInput) (*mcp.CallToolResult, *CheckOutput, error) {
	argv, role, err := in.parse()
	if err != nil {
		return nil, nil, err
	}
	p, err := s.policy(role, s.workdir(in.Workdir), "")
	if err != nil {
		return nil, nil, err
	}
	gk, err := sandbox.NewGatekeeper(p)
	if err != nil {
		return nil, nil, err
	}
	c := gk.Check(ctx, argv, in.Task, output.NewRedactor(sandbox.Secrets(p, s.o.Host), output.DefaultRules()))
	out := &CheckOutput{GateVerdict: c.GateVerdict, Command: output.Line(confirm.Quote(argv)), Message: output.Line(c.Message)}
	return &mcp.CallToolResult{Content: text(out.Message)}, out, nil
}

func (s *Server) endSession(ctx context.Context, _ *mcp.CallToolRequest, in EndInput) (*mcp.CallToolResult, *EndOutput, error) {
	if in.Session == "" {
		return nil, nil, errors.New("session: give the name of the session to end")
	}
	ended, err := s.sessions.end(ctx, in.Session)
	out := &EndOutput{Ended: ended, Message: fmt.Sprintf("session %s ended", in.Session)}
	if !ended {
		out.Message = fmt.Sprintf("no session %s is running", in.Session)
	}
	if err != nil {
		out.Message += "; removing its sandbox: " + err.Error()
	}
	out.Message = output.Line(out.Message)
	return &mcp.CallToolResult{Content: text(out.Message)}, out, nil
}

// parse is the command as an argv and the role it runs in.
func (in CommandInput) parse() ([]string, profiles.Role, error) {
	role := profiles.Role(in.Role)
	if role == "" {
		role = profiles.RoleAgent
	}
	if role.Validate() != nil {
		return nil, "", fmt.Errorf("role %q: use %s or %s", in.Role, profiles.RoleAgent, profiles.RoleReproducer)
	}
	line := strings.TrimSpace(in.Command)
	switch {
	case len(in.Argv) > 0 && line != "":
		return nil, "", errors.New("give argv or command, not both")
	case line != "":
		return []string{"sh", "-c", in.Command}, role, nil
	case len(in.Argv) > 0:
		return in.Argv, role, backends.CheckArgv(in.Argv)
	}
	return nil, "", errors.New("empty command: give argv (e.g. [\"python3\", \"repro.py\"]) or command (one shell line)")
}

// timeout is the asked timeout: at most the role's, which the config set.
func (in RunInput) timeout(p *policy.Policy) (time.Duration, error) {
	secs := in.TimeoutSeconds
	if secs == 0 {
		return 0, nil
	}
	limit := p.Timeout()
	if limit <= 0 {
		limit = config.MaxTimeout
	}
	if math.IsNaN(secs) || secs < config.MinTimeout.Seconds() || secs > limit.Seconds() {
		return 0, fmt.Errorf("timeout_seconds %v: must be between %v and the %s role's timeout, %v (0 means the role's timeout)",
			secs, config.MinTimeout.Seconds(), p.Role, limit.Seconds())
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// timeoutHint names the key that decides the role's timeout: the agent
// cannot raise it (timeout_seconds only shortens), the operator can.
func timeoutHint(p *policy.Policy) string {
	where := p.Config
	if where == "" {
		where = "a triage.toml at " + p.WorkspaceRoot
	}
	return fmt.Sprintf("the %s role's timeout is %s in %s, %s, set by the operator; timeout_seconds can only shorten it",
		p.Role, p.TimeoutKey, where, p.Timeout())
}

// workdir resolves a relative working directory against the workspace
// root, not the server's own directory.
func (s *Server) workdir(dir string) string {
	if dir == "" || filepath.IsAbs(dir) {
		return dir
	}
	return filepath.Join(s.cfg.Root, dir)
}

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
