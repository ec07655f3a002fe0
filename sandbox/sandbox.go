// Package sandbox is the one path every command takes: load the config,
// build the role's policy, prepare the writable paths, pick the backend and
// run under a deadline. The CLI, the selftest and library users all call it.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Exit codes of `run` that are triage-sandbox's own (see the README).
const (
	ExitTimeout    = 124
	ExitRefused    = 125
	ExitNotExec    = 126
	ExitNotFound   = 127
	ExitSignalBase = 128
)

// LoadConfig reads the config named by flag, or the nearest triage.toml from
// cwd upwards, or returns the built-in defaults rooted at cwd.
func LoadConfig(flag, cwd string) (*config.File, error) {
	if flag != "" {
		return config.Load(flag)
	}
	found, err := config.Find(cwd)
	if err != nil {
		return nil, fmt.Errorf("looking for triage.toml: %w", err)
	}
	if found == "" {
		return config.Default(cwd), nil
	}
	return config.Load(found)
}

// Compile loads the config and builds the role's policy.
func Compile(configFlag, role string, host policy.Host, opts policy.Options) (*policy.Policy, error) {
	cfg, err := LoadConfig(configFlag, host.Cwd)
	if err != nil {
		return nil, err
	}
	return policy.Build(cfg, role, host, opts)
}

// Request is one command to run.
type Request struct {
	Policy *policy.Policy
	// Timeout overrides the policy's role timeout when > 0.
	Timeout time.Duration
	Command backends.Command
	Streams backends.Streams
}

// Run prepares the host side and runs the request on backend. It returns an
// error only when the command could not be run at all (exit 125).
func Run(ctx context.Context, backend backends.Backend, req Request) (backends.Result, error) {
	if len(req.Command.Argv) == 0 || req.Command.Argv[0] == "" {
		return backends.Result{}, errors.New("empty command: give the program to run after --, e.g. triage-sandbox run -- python3 repro.py")
	}
	if err := policy.Prepare(req.Policy); err != nil {
		return backends.Result{}, err
	}
	req.Command.Timeout = req.Policy.Timeout()
	if req.Timeout > 0 {
		req.Command.Timeout = req.Timeout
	}
	return backend.Run(ctx, req.Policy, req.Command, req.Streams)
}

// ExitCode maps a result to `run`'s exit code.
func ExitCode(res backends.Result) int {
	if res.TimedOut {
		return ExitTimeout
	}
	return res.ExitCode
}

// SelfExe returns the path of a static triage-sandbox binary to mount into
// sandboxes: TRIAGE_SANDBOX_SELF (tests, packagers) or this executable. A
// dynamically linked binary would depend on the image's libc, so it is
// refused with the command that builds a static one.
func SelfExe() (string, error) {
	exe := os.Getenv("TRIAGE_SANDBOX_SELF")
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Errorf("finding the triage-sandbox binary: %w", err)
		}
	}
	exe, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return "", fmt.Errorf("resolving the triage-sandbox binary: %w", err)
	}
	static, err := isStatic(exe)
	if err != nil {
		return "", err
	}
	if !static {
		return "", fmt.Errorf("%s is dynamically linked; the sandbox runs it inside the image, so build it static: CGO_ENABLED=0 go build ./cmd/triage-sandbox", exe)
	}
	return exe, nil
}
