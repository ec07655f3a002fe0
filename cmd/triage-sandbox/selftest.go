package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
	"github.com/triage-sandbox/triage-sandbox/selftest"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

func newSelftestCmd() *cobra.Command {
	var pf policyFlags
	var asJSON bool
	var junit, warmMode string
	cmd := &cobra.Command{
		Use:   "selftest [--config F] [--role agent|reproducer|all] [--backend B] [--warm session|pool] [--json] [--junit FILE]",
		Short: "Try what a hostile reproducer would and check each attempt is blocked (the CI gate)",
		Long: fmt.Sprintf("Exit status: %d every check passed; %d a check failed or was inconclusive;\n"+
			"%d the backend cannot run here (the report says why).",
			exitcode.SelftestPassed, exitcode.SelftestFailed, exitcode.SelftestUnavailable),
		RunE: func(cmd *cobra.Command, args []string) error {
			roles := profiles.Roles()
			switch pf.role {
			case "all", "":
			case profiles.RoleAgent, profiles.RoleReproducer:
				roles = []profiles.Role{pf.role}
			default:
				return &exitError{code: exitcode.SelftestUnavailable, err: fmt.Errorf("--role %q: use agent, reproducer or all", pf.role)}
			}
			unavailable := func(err error) error {
				if asJSON {
					_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"passed": false, "error": err.Error(), "backend_unavailable": true})
				}
				return &exitError{code: exitcode.SelftestUnavailable, err: fmt.Errorf("selftest cannot run: %v", err)}
			}
			host, err := policy.CurrentHost()
			if err != nil {
				return unavailable(err)
			}
			reg := builtin.Registry()
			cfg, err := sandbox.LoadConfig(pf.config, host.Cwd, reg.Names())
			if err != nil {
				return &exitError{code: exitcode.SelftestUnavailable, err: err}
			}
			// Built for what the chosen backend enforces (its readable base).
			p, err := sandbox.Build(reg, cfg, roles[0], host, policy.Options{Backend: pf.backend})
			if err != nil {
				return &exitError{code: exitcode.SelftestUnavailable, err: err}
			}
			if err := handOff(reg, p); err != nil {
				return &exitError{code: exitcode.SelftestUnavailable, err: err}
			}
			self, err := sandbox.SelfExe()
			if err != nil {
				return unavailable(err)
			}
			b, err := newBackendWith(cmd.Context(), p, self)
			if err != nil {
				return unavailable(err)
			}
			if err := b.Ready(cmd.Context(), p); err != nil {
				return unavailable(err)
			}
			opts := selftest.Options{Config: cfg, Roles: roles, Backend: b, SelfHost: self}
			switch warmMode {
			case "":
			case "session", "pool":
				if p.AllowAll {
					break
				}
				dir := warm.DefaultDir()
				wb := &warm.Backend{Backend: b, SelfExe: self, Dir: dir}
				opts.Warm, opts.Backend = warmMode, wb
				opts.EndWarm = func(p *policy.Policy) { _, _ = warm.End(dir, p) }
				opts.KeepHere = wb.KeepHere
			default:
				return &exitError{code: exitcode.SelftestUnavailable, err: fmt.Errorf("--warm %q: use session or pool", warmMode)}
			}
			rep := selftest.Run(cmd.Context(), opts)
			if junit != "" {
				f, err := os.Create(junit)
				if err != nil {
					return &exitError{code: exitcode.SelftestFailed, err: fmt.Errorf("--junit %s: %v", junit, err)}
				}
				werr := selftest.WriteJUnit(f, rep)
				if cerr := f.Close(); werr == nil {
					werr = cerr
				}
				if werr != nil {
					return &exitError{code: exitcode.SelftestFailed, err: fmt.Errorf("--junit %s: %v", junit, werr)}
				}
			}
			if asJSON {
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
		},
	}
	cmd.Flags().StringVar(&pf.config, "config", "", "triage.toml to read (default: nearest from the current directory up)")
	cmd.Flags().StringVar((*string)(&pf.role), "role", "all", "agent, reproducer or all")
	addBackendFlag(cmd, &pf.backend, "backend to test")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	cmd.Flags().StringVar(&warmMode, "warm", "", "run every phase through a warm sandbox: session (each phase its own agent session) or pool")
	cmd.Flags().StringVar(&junit, "junit", "", "also write JUnit XML to FILE")
	return cmd
}
