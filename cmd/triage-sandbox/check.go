package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/gate/confirm"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

func newCheckCmd() *cobra.Command {
	var pf policyFlags
	var task string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [flags] -- CMD [ARG...]",
		Short: "Print the gate's verdict on a command and why; runs nothing",
		Long: "Judge a command as `run` would, without running it: the deny list over the parsed\n" +
			"shell, then the guard when [sandbox.guard] is enabled. One argument containing\n" +
			"spaces is read as a shell command line (as `sh -c` would run it).\n" +
			fmt.Sprintf("Exit codes: %d allowed; %d denied; %d a confirm rule would ask the operator; %d usage error.",
				exitcode.CheckAllowed, exitcode.CheckDenied, exitcode.CheckConfirm, exitcode.Refused),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() < 0 && len(args) > 0 {
				return refuse(fmt.Errorf("put the command after --, e.g. triage-sandbox check -- %s", args[0]))
			}
			if len(args) == 0 {
				return refuse(fmt.Errorf("empty command: give the command to judge after --, e.g. triage-sandbox check -- git push"))
			}
			p, host, err := pf.compileWithHost()
			if err != nil {
				return refuse(err)
			}
			gk, err := sandbox.NewGatekeeper(p)
			if err != nil {
				return refuse(err)
			}
			argv := args
			if len(args) == 1 && containsSpace(args[0]) {
				argv = []string{"sh", "-c", args[0]}
			}
			red := output.NewRedactor(sandbox.Secrets(p, host), output.DefaultRules())
			c := gk.Check(cmd.Context(), argv, task, red)
			printWarnings(c.Warnings)
			code := c.Code
			if asJSON {
				_ = json.NewEncoder(os.Stdout).Encode(struct {
					sandbox.GateVerdict
					Command string `json:"command"`
					Message string `json:"message"`
				}{c.GateVerdict, confirm.Quote(argv), c.Message})
			} else {
				fmt.Println(c.Message)
			}
			if code == exitcode.CheckAllowed {
				return nil
			}
			return &exitError{code: code}
		},
	}
	pf.register(cmd, profiles.RoleAgent)
	cmd.Flags().StringVar(&task, "task", "", "what the agent is working on (shown to the guard)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verdict as one JSON object")
	return cmd
}

func containsSpace(s string) bool {
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == ';' || r == '|' || r == '&' {
			return true
		}
	}
	return false
}

// operatorConfirm asks on the controlling terminal; with none, a confirm
// rule denies. "Allow for this session" lasts as long as mem does.
func operatorConfirm(mem *confirm.Memory) sandbox.ConfirmFunc {
	return func(ctx context.Context, p confirm.Prompt) (bool, error) {
		a, err := confirm.OpenTerminal()
		if err != nil {
			return false, err
		}
		defer a.Close()
		return confirm.Decide(ctx, a, mem, p)
	}
}
