package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
	"github.com/triage-sandbox/triage-sandbox/selftest"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// selftestFlags are selftest's flags.
type selftestFlags struct {
	pf              policyFlags
	asJSON          bool
	junit, warmMode string
}

func newSelftestCmd() *cobra.Command {
	var f selftestFlags
	cmd := &cobra.Command{
		Use:   "selftest [--config F] [--role agent|reproducer|all] [--backend B] [--warm session|pool] [--json] [--junit FILE]",
		Short: "Try what a hostile reproducer would and check each attempt is blocked (the CI gate)",
		Long: fmt.Sprintf("Exit status: %d every check passed; %d a check failed or was inconclusive;\n"+
			"%d the backend cannot run here (the report says why).",
			exitcode.SelftestPassed, exitcode.SelftestFailed, exitcode.SelftestUnavailable),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := f.options(cmd)
			if err != nil {
				return err
			}
			return f.report(selftest.Run(cmd.Context(), opts))
		},
	}
	cmd.Flags().StringVar(&f.pf.config, "config", "", "triage.toml to read (default: nearest from the current directory up)")
	cmd.Flags().StringVar((*string)(&f.pf.role), "role", "all", "agent, reproducer or all")
	addBackendFlag(cmd, &f.pf.backend, "backend to test")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as one JSON object")
	cmd.Flags().StringVar(&f.warmMode, "warm", "", "run every phase through a warm sandbox: session (each phase its own agent session) or pool")
	cmd.Flags().StringVar(&f.junit, "junit", "", "also write JUnit XML to FILE")
	return cmd
}

// unavailable is the error of a backend that cannot run here (with the
// JSON report's one object under --json).
func (f *selftestFlags) unavailable(err error) error {
	if f.asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"passed": false, "error": err.Error(), "backend_unavailable": true})
	}
	return &exitError{code: exitcode.SelftestUnavailable, err: fmt.Errorf("selftest cannot run: %v", err)}
}

// options are the selftest's: the roles, the config, the backend ready
// for the first role's policy, warm reuse as --warm asks.
func (f *selftestFlags) options(cmd *cobra.Command) (selftest.Options, error) {
	roles := profiles.Roles()
	switch f.pf.role {
	case "all", "":
	case profiles.RoleAgent, profiles.RoleReproducer:
		roles = []profiles.Role{f.pf.role}
	default:
		return selftest.Options{}, &exitError{code: exitcode.SelftestUnavailable, err: fmt.Errorf("--role %q: use agent, reproducer or all", f.pf.role)}
	}
	host, err := policy.CurrentHost()
	if err != nil {
		return selftest.Options{}, f.unavailable(err)
	}
	reg := builtin.Registry()
	cfg, err := sandbox.LoadConfig(f.pf.config, host.Cwd, reg.Names())
	if err != nil {
		return selftest.Options{}, &exitError{code: exitcode.SelftestUnavailable, err: err}
	}
	// Built for what the chosen backend enforces (its readable base).
	p, err := sandbox.Build(reg, cfg, roles[0], host, policy.Options{Backend: f.pf.backend})
	if err != nil {
		return selftest.Options{}, &exitError{code: exitcode.SelftestUnavailable, err: err}
	}
	if err := handOff(reg, p); err != nil {
		return selftest.Options{}, &exitError{code: exitcode.SelftestUnavailable, err: err}
	}
	self, err := sandbox.SelfExe()
	if err != nil {
		return selftest.Options{}, f.unavailable(err)
	}
	b, err := newBackendWith(cmd.Context(), p, self)
	if err != nil {
		return selftest.Options{}, f.unavailable(err)
	}
	if err := b.Ready(cmd.Context(), p); err != nil {
		return selftest.Options{}, f.unavailable(err)
	}
	opts := selftest.Options{Config: cfg, Roles: roles, Backend: b, SelfHost: self}
	return opts, f.warm(&opts, p, b, self)
}

// warm runs every phase through a warm sandbox when --warm asks (not
// under allow_all: nothing to keep).
func (f *selftestFlags) warm(opts *selftest.Options, p *policy.Policy, b backends.Backend, self string) error {
	switch f.warmMode {
	case "":
	case "session", "pool":
		if p.AllowAll {
			break
		}
		dir := warm.DefaultDir()
		wb := &warm.Backend{Backend: b, SelfExe: self, Dir: dir}
		opts.Warm, opts.Backend = f.warmMode, wb
		opts.EndWarm = func(p *policy.Policy) { _, _ = warm.End(dir, p) }
		opts.KeepHere = wb.KeepHere
	default:
		return &exitError{code: exitcode.SelftestUnavailable, err: fmt.Errorf("--warm %q: use session or pool", f.warmMode)}
	}
	return nil
}

// report writes rep (JUnit too under --junit) and says whether it passed.
func (f *selftestFlags) report(rep *selftest.Report) error {
	if f.junit != "" {
		if err := writeJUnit(f.junit, rep); err != nil {
			return &exitError{code: exitcode.SelftestFailed, err: fmt.Errorf("--junit %s: %v", f.junit, err)}
		}
	}
	if f.asJSON {
		if err := selftest.WriteJSON(os.Stdout, rep); err != nil {
			return &exitError{code: exitcode.SelftestFailed, err: err}
		}
	} else {
		selftest.WriteHuman(os.Stdout, rep)
	}
	if !rep.Passed() {
		return &exitError{code: exitcode.SelftestFailed}
	}
	return nil
}

func writeJUnit(path string, rep *selftest.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	werr := selftest.WriteJUnit(f, rep)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}
