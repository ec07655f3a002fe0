package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func newRenderCmd() *cobra.Command {
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "render [--role R] [--backend B] [-- CMD...]",
		Short: "Print exactly what would run: the policy built for the backend, as that backend renders it",
		Long: "Print exactly what would run: the policy built for the backend (its own capabilities),\n" +
			"as that backend renders it: docker's container create and exec requests, an OCI\n" +
			"config.json, a Seatbelt profile with its parameters, the local backend's plan.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"/bin/sh"}
			}
			p, err := pf.compile()
			if err != nil {
				return refuse(err)
			}
			// As run says them: what a default chose, what is weaker.
			printWarnings(p.Warnings)
			b, err := newBackend(cmd.Context(), p, false)
			if err != nil {
				return refuse(err)
			}
			art, err := b.Render(p, backends.Command{Argv: args, Timeout: p.Timeout()})
			if err != nil {
				return refuse(err)
			}
			js, err := art.JSON()
			if err != nil {
				return refuse(err)
			}
			fmt.Fprintln(os.Stdout, string(js))
			return nil
		},
	}
	pf.register(cmd, profiles.RoleAgent) // as run and check
	return cmd
}
