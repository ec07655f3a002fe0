package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

func newSessionCmd() *cobra.Command {
	root := &cobra.Command{Use: "session", Short: "List or end agent sessions and reproducer pools"}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List running sessions and pools",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			recs, err := warm.List(warm.DefaultDir())
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(recs)
			}
			printRecords(os.Stdout, recs)
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var pf policyFlags
	end := &cobra.Command{
		Use:   "end NAME",
		Short: "End the named agent session of this workspace (its sandbox is removed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pf.role, pf.session = profiles.RoleAgent, args[0]
			p, err := pf.compile()
			if err != nil {
				return refuse(err)
			}
			ended, err := warm.End(warm.DefaultDir(), p)
			if err != nil {
				return err
			}
			if !ended {
				return &exitError{code: exitcode.Failed, err: fmt.Errorf("no session %q is running for %s", args[0], p.WorkspaceRoot)}
			}
			fmt.Fprintf(os.Stderr, "triage-sandbox: session %s ended\n", args[0])
			return nil
		},
	}
	end.Flags().StringVar(&pf.config, "config", "", "triage.toml to read (default: nearest triage.toml from the current directory up)")
	root.AddCommand(list, end)
	return root
}

func printRecords(w io.Writer, recs []warm.Record) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tROLE\tBACKEND\tPOLICY\tSINCE\tIDLE\tWORKSPACE\tALIVE")
	for _, r := range recs {
		name := r.Name
		if r.Kind == warm.KindPool {
			name = fmt.Sprintf("(%d)", r.Pool)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.19s\t%s\t%s\t%s\t%v\n", r.Kind, name, r.Role, r.Backend, r.Policy,
			r.Since.Local().Format(time.DateTime), r.Idle, r.Workspace, r.Alive())
	}
	_ = tw.Flush()
}
