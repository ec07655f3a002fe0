package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/sandboxinit"
)

// newInitCmd is the hidden init that runs inside the container.
func newInitCmd() *cobra.Command {
	var lifeline bool
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:    docker.InitSubcommand + " [--lifeline] -- CMD [ARG...]",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			code := sandboxinit.Run(context.Background(), sandboxinit.Options{
				Argv: args, Lifeline: lifeline, TTL: ttl, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
			})
			if code == 0 {
				return nil
			}
			return &exitError{code: code}
		},
	}
	cmd.Flags().BoolVar(&lifeline, "lifeline", false, "exit, killing the command, when stdin closes")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "kill everything after this long, whatever else happens")
	cmd.Flags().SetInterspersed(false)
	return cmd
}
