package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func newGCCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove leftover sandboxes (owner process gone or lifetime passed)",
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := dockerBackend(cmd)
			if err != nil {
				return refuse(err)
			}
			removed, err := d.Sweep(cmd.Context())
			for _, id := range removed {
				fmt.Fprintf(os.Stdout, "removed %s\n", id[:12])
			}
			fmt.Fprintf(os.Stderr, "triage-sandbox: gc removed %d leftover sandbox(es)\n", len(removed))
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
}
