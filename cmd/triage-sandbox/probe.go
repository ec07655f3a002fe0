package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/probe"
)

// newProbeCmds are the hidden selftest probe and its helpers.
func newProbeCmds() []*cobra.Command {
	var plan, tag string
	run := &cobra.Command{
		Use:    probe.Subcommand + " --plan P",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := probe.DecodePlan(plan)
			if err != nil {
				return refuse(err)
			}
			self, err := os.Executable()
			if err != nil {
				return refuse(err)
			}
			if code := probe.Execute(p, self, os.Stdout, os.Stderr); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	run.Flags().StringVar(&plan, "plan", "", "encoded plan")
	// The tag only sits in argv, so the host can find this process.
	run.Flags().StringVar(&tag, "tag", "", "marker for the host")
	child := &cobra.Command{
		Use:                probe.ChildSubcommand,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := probe.Child(args, os.Stderr); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	return []*cobra.Command{run, child}
}
