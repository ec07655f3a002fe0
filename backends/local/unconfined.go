package local

import (
	"context"
	"encoding/json"
	"os"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// UnconfinedWarning is shown on every allow_all run.
const UnconfinedWarning = "allow_all = true: this command runs UNCONFINED on the host, as you, with your full environment; nothing triage-sandbox promises holds"

// Unconfined is what allow_all asks for: the command runs on the host as
// the caller, with the full environment, under the shared supervisor
// (timeout, whole tree killed) and nothing else. It enforces nothing, so
// it declares no capability; the selftest fails on it.
type Unconfined struct{}

// NewUnconfined makes the allow_all runner.
func NewUnconfined(backends.Env) (backends.Backend, error) { return Unconfined{}, nil }

func (Unconfined) Name() string                                { return Name }
func (Unconfined) Capabilities() []policy.Capability           { return nil }
func (Unconfined) Available(context.Context) error             { return nil }
func (Unconfined) Ready(context.Context, *policy.Policy) error { return nil }
func (Unconfined) Sweep(context.Context) ([]string, error)     { return nil, nil }
func (Unconfined) Describe(context.Context, *policy.Policy) map[string]string {
	return map[string]string{"isolation": "none (allow_all)"}
}

// SelfPath is this binary on the host.
func (Unconfined) SelfPath() string {
	exe, _ := os.Executable()
	return exe
}

type unconfinedArtifact struct {
	Isolation string   `json:"isolation"`
	Warning   string   `json:"warning"`
	Command   []string `json:"command"`
	Dir       string   `json:"dir"`
}

func (a unconfinedArtifact) JSON() ([]byte, error) { return json.MarshalIndent(a, "", "  ") }

// Summary implements backends.Artifact: the host as it is, the caller's
// whole environment (Exec passes os.Environ), no limit.
func (a unconfinedArtifact) Summary() (backends.Rendered, error) {
	return backends.Rendered{Mounts: []backends.RenderedMount{{Path: "/", Writable: true, Tree: true}},
		Env: backends.EnvNames(os.Environ()), Network: policy.NetworkHost, UID: os.Getuid(), GID: os.Getgid()}, nil
}

// Render implements backends.Backend.
func (Unconfined) Render(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
	return unconfinedArtifact{Isolation: "none", Warning: UnconfinedWarning, Command: cmd.Argv, Dir: p.Workdir}, nil
}

// Start implements backends.Backend.
func (Unconfined) Start(ctx context.Context, p *policy.Policy, _ backends.StartOptions) (backends.Sandbox, error) {
	return &unconfinedSandbox{p: p}, nil
}

type unconfinedSandbox struct{ p *policy.Policy }

func (s *unconfinedSandbox) ID() string { return "unconfined" }

// Scratch is the caller's own home and temporary directory.
func (s *unconfinedSandbox) Scratch() policy.ScratchPaths {
	home, _ := os.UserHomeDir()
	return policy.ScratchPaths{Home: home, Tmp: os.TempDir()}
}

func (s *unconfinedSandbox) Warnings() []string          { return []string{UnconfinedWarning} }
func (s *unconfinedSandbox) Close(context.Context) error { return nil }

// Exec runs the command on the host under the supervisor.
func (s *unconfinedSandbox) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	if err := backends.CheckArgv(cmd.Argv); err != nil {
		return backends.Result{}, err
	}
	r := supervise.Run(ctx, supervise.Spec{Argv: cmd.Argv, Env: os.Environ(), Dir: s.p.Workdir,
		Stdin: cmd.Stdin, Stdout: out.Stdout, Stderr: out.Stderr, Timeout: cmd.Timeout, Grace: s.p.Lifetime.KillGrace})
	res := backends.Result{ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, Duration: r.Duration, Sandbox: "unconfined"}
	if r.LifelineCut && ctx.Err() != nil {
		res.Canceled, res.ExitCode = true, 130
	}
	return res, nil
}
