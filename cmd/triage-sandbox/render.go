package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/oci"
)

func newRenderCmd() *cobra.Command {
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "render --role R [--backend docker|oci|seatbelt] [-- CMD...]",
		Short: "Print exactly what would run: the container create request, an OCI config.json, or a Seatbelt profile with its parameters",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"/bin/sh"}
			}
			format := pf.backend
			if format == "oci" {
				pf.backend = "docker"
			}
			p, err := pf.compile()
			if err != nil {
				return refuse(err)
			}
			var art backends.Artifact
			if format == "oci" {
				art, err = oci.Render(p, backends.Command{Argv: args, Timeout: p.Timeout()}, selfPathForRender())
			} else {
				var b backends.Backend
				if b, err = newBackend(p, false); err != nil {
					return refuse(err)
				}
				art, err = b.Render(p, backends.Command{Argv: args, Timeout: p.Timeout()})
			}
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
	pf.register(cmd, "")
	_ = cmd.MarkFlagRequired("role")
	return cmd
}

func selfPathForRender() string {
	exe, err := os.Executable()
	if err != nil {
		return "/usr/local/bin/triage-sandbox"
	}
	return exe
}
