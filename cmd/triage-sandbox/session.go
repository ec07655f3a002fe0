package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/output"
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
	var all bool
	end := &cobra.Command{
		Use:   "end NAME | --all",
		Short: "End the named agent session or pool (pool:ROLE, as session list shows it) of this workspace, or with --all every one session list shows; their sandboxes are removed",
		Args: func(cmd *cobra.Command, args []string) error {
			if all {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if all {
				return endAll()
			}
			if strings.HasPrefix(args[0], warm.KindPool+":") {
				return endPools(&pf, args[0])
			}
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
	end.Flags().BoolVar(&all, "all", false, "end every session and pool of this user, in every workspace (as session list shows them)")
	end.Flags().StringVar(&pf.config, "config", "", "triage.toml to read (default: nearest triage.toml from the current directory up)")
	root.AddCommand(list, end)
	return root
}

// endAll ends every live session and pool this user has (warm.EndAll).
func endAll() error {
	ended, err := warm.EndAll(warm.DefaultDir())
	for _, r := range ended {
		fmt.Fprintf(os.Stderr, "triage-sandbox: %s %s ended (%s)\n", r.Kind, output.Line(r.Name), output.Line(r.Workspace))
	}
	if err != nil {
		return err
	}
	if len(ended) == 0 {
		fmt.Fprintln(os.Stderr, "triage-sandbox: no session or pool was running")
	}
	return nil
}

// endPools ends every pool called name in this workspace: found by its
// record, so a pool the config no longer asks for can be ended too.
func endPools(pf *policyFlags, name string) error {
	pf.role = profiles.RoleAgent // only for the workspace root
	p, err := pf.compile()
	if err != nil {
		return refuse(err)
	}
	recs, err := warm.Named(warm.DefaultDir(), name, p.WorkspaceRoot)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return &exitError{code: exitcode.Failed, err: fmt.Errorf("no %s is running for %s (session list shows what is)", name, p.WorkspaceRoot)}
	}
	for _, r := range recs {
		if err := warm.EndKeeper(warm.DefaultDir(), r); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "triage-sandbox: %s ended (%s, %d sandboxes)\n", name, r.Backend, r.Pool)
	}
	return nil
}

// printRecords shows the keepers; NAME is what `session end` takes and
// IDLE how long each has been unused (it ends at its warm_idle).
func printRecords(w io.Writer, recs []warm.Record) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tSIZE\tROLE\tBACKEND\tPOLICY\tSINCE\tIDLE\tWARM_IDLE\tWORKSPACE\tALIVE")
	for _, r := range recs {
		size := 1
		if r.Kind == warm.KindPool {
			size = r.Pool
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.19s\t%s\t%s\t%s\t%s\t%v\n", r.Kind, output.Line(r.Name), size, r.Role, r.Backend, r.Policy,
			r.Since.Local().Format(time.DateTime), r.Idle, r.WarmIdle, output.Line(r.Workspace), r.Alive())
	}
	_ = tw.Flush()
}
