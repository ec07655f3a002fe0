package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// prepareArgv is what a reproducer runs most: `go test ./...` builds
// every package, its tests and vet's facts, and its passing results are
// cached as on the maintainer's machine (a reproducer that changes a
// package runs that package's tests again). buildOnlyArgv builds the
// same and runs no test.
var (
	prepareArgv   = []string{"go", "test", "./..."}
	buildOnlyArgv = []string{"go", "test", "-run=^$", "./..."}
)

func newPrepareCmd() *cobra.Command {
	var pf policyFlags
	var buildOnly bool
	cmd := &cobra.Command{
		Use:   "prepare",
		Short: "Build the project's caches (Go build cache) once, for every reproducer to read",
		Long: "Build the project's Go build cache (go test ./...: the packages, their tests, and the\n" +
			"results of the tests that pass) in a sandbox of the reproducer's policy, from the\n" +
			"checkout as the host has it (run it before any issue is read), and keep it in\n" +
			"triage-sandbox's state directory. Reproducers then read it, and what they write\n" +
			"there is discarded with their sandbox. Run it again when go.mod, go.sum or go\n" +
			"change: a reproducer only uses a cache built for exactly those.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			argv := prepareArgv
			if buildOnly {
				argv = buildOnlyArgv
			}
			return prepare(cmd, &pf, argv)
		},
	}
	cmd.Flags().BoolVar(&buildOnly, "build-only", false, "build the packages and their tests but run no test (go test -run=^$)")
	pf.role = profiles.RoleReproducer
	addBackendFlag(cmd, &pf.backend, "")
	cmd.Flags().StringVar(&pf.config, "config", "", "triage.toml to read (default: nearest triage.toml from the current directory up)")
	return cmd
}

func prepare(cmd *cobra.Command, pf *policyFlags, argv []string) error {
	p, host, err := pf.compileWithHost()
	if err != nil {
		return refuse(err)
	}
	prep, err := policy.ForGoCachePrepare(p, host)
	if err != nil {
		return refuse(err)
	}
	b, err := newBackend(cmd.Context(), prep.Policy, true)
	if err != nil {
		_ = prep.Abandon()
		return refuse(err)
	}
	fmt.Fprintf(os.Stderr, "triage-sandbox: prepare: building the Go build cache of %s (%s; a cold build can take minutes)\n", p.GoCache.Project, output.Line(fmt.Sprint(argv)))
	start := time.Now()
	req := sandbox.Request{
		Policy: prep.Policy, Command: backends.Command{Argv: argv, Workdir: p.GoCache.Project},
		Redactor: output.NewRedactor(sandbox.Secrets(prep.Policy, host), output.DefaultRules()),
		Streams:  backends.Streams{Stdout: os.Stderr, Stderr: os.Stderr},
		// Our own command, not one anybody asked for.
		NoGate: true,
	}
	res, err := sandbox.Run(cmd.Context(), b, req)
	printWarnings(res.Warnings)
	if err == nil && (res.TimedOut || res.OOMKilled || res.OutputCeiling || res.Canceled) {
		err = errors.New("the build did not finish (timed out, out of memory or stopped)")
	}
	if err != nil {
		_ = prep.Abandon()
		return refuse(fmt.Errorf("prepare: %w", err))
	}
	// A package that fails to build still leaves the others' entries,
	// which are as trusted: the cache is kept, and the failure said.
	if code := sandbox.ExitCode(res.Result); code != 0 {
		fmt.Fprintf(os.Stderr, "triage-sandbox: warning: prepare: %v exited %d; the cache keeps what was built and what passed\n", argv, code)
	}
	if err := prep.Commit(); err != nil {
		_ = prep.Abandon()
		return &exitError{code: exitcode.Failed, err: fmt.Errorf("prepare: %w", err)}
	}
	fmt.Fprintf(os.Stderr, "triage-sandbox: prepare: the Go build cache is ready in %s (%s); reproducers read it\n", prep.Dir(), time.Since(start).Round(time.Second))
	return nil
}
