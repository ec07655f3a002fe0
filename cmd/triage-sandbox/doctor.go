package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

func newDoctorCmd() *cobra.Command {
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "doctor [--config F]",
		Short: "Say whether each backend can run here, and why not",
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			say := func(ok bool, what, detail string) {
				mark := "ok  "
				if !ok {
					mark, bad = "FAIL", bad+1
				}
				fmt.Fprintf(os.Stdout, "%s  %-28s %s\n", mark, what, detail)
			}
			// Backends that cannot run here but are not the configured one
			// are information, not failures.
			info := func(what, detail string) { fmt.Fprintf(os.Stdout, "no    %-28s %s\n", what, detail) }
			configured := ""
			for _, role := range profiles.Roles() {
				pf.role = role
				p, err := pf.compile()
				if err != nil {
					say(false, role+" policy", err.Error())
					continue
				}
				say(true, role+" policy", p.Hash()+" (backend "+p.Backend+")")
				configured = p.Backend
				for _, w := range p.Warnings {
					say(false, role+" warning", w)
				}
			}
			exe, err := sandbox.SelfExe()
			if err != nil {
				say(false, "static binary", err.Error())
			} else {
				say(true, "static binary", exe)
			}
			b, err := docker.New(backends.Env{SelfExe: exe})
			if err != nil {
				say(false, "docker", err.Error())
			} else if err := b.Available(cmd.Context()); err != nil {
				say(false, "docker daemon", err.Error())
			} else {
				say(true, "docker daemon", "reachable")
				if err := b.(*docker.Backend).EnsureImage(cmd.Context(), profiles.DefaultImage); err != nil {
					say(false, "docker image", err.Error())
				} else {
					say(true, "docker image", profiles.DefaultImage)
				}
			}
			for _, name := range []string{"seatbelt", "local"} {
				detail := "not implemented yet"
				if name == "seatbelt" {
					detail = "macOS only; not implemented yet"
				}
				if configured == name {
					say(false, name, detail+": choose docker ([sandbox] backend or TRIAGE_SANDBOX)")
				} else {
					info(name, detail)
				}
			}
			if bad > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&pf.config, "config", "", "triage.toml to read")
	return cmd
}
