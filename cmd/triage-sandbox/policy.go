package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func newPolicyCmd() *cobra.Command {
	var pf policyFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "policy [--role R] [--json]",
		Short: "Explain the resolved policy: what is readable, writable, unreadable, which env passes and why",
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := pf.compile()
			if err != nil {
				return refuse(err)
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					*policy.Policy
					Hash string `json:"hash"`
				}{p, p.Hash()})
			}
			fmt.Fprint(os.Stdout, policy.Explain(p))
			return nil
		},
	}
	pf.register(cmd, profiles.RoleAgent) // as run and check
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the policy as JSON")
	return cmd
}
