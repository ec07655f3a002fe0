package docker_test

import (
	"context"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// runOutcome runs argv the way the CLI does (output redacted, stdout and
// stderr together); the backend-neutral checks are in backends/testkit/integration.
func runOutcome(t *testing.T, p *policy.Policy, argv ...string) (sandbox.Outcome, string) {
	t.Helper()
	testenv.RequireDocker(t)
	b, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	var out testenv.Buffer
	res, err := sandbox.Run(context.Background(), b, sandbox.Request{
		Policy: p, Command: backends.Command{Argv: argv},
		Streams:  backends.Streams{Stdout: &out, Stderr: &out},
		Redactor: output.NewRedactor(nil, output.DefaultRules()),
	})
	if err != nil {
		t.Fatalf("run %v: %v", argv, err)
	}
	return res, out.String()
}
