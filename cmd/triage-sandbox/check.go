package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/gate"
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
			d := gk.Rules(argv)
			v := sandbox.GateVerdict{Verdict: string(d.Verdict), Rule: d.Rule, Reason: d.Reason}
			code := exitcode.CheckAllowed
			switch d.Verdict {
			case gate.Deny:
				code = exitcode.CheckDenied
			case gate.Confirm:
				code = exitcode.CheckConfirm
			default:
				if gk.GuardEnabled() {
					red := output.NewRedactor(sandbox.Secrets(p, host), output.DefaultRules())
					// Nobody is asked here: a confirm rule was reported above.
					var never sandbox.ConfirmFunc
					gv, warns, err := gk.Judge(cmd.Context(), argv, task, never, red)
					printWarnings(warns)
					v = gv
					if err != nil {
						code = exitcode.CheckDenied
					}
				}
			}
			if asJSON {
				_ = json.NewEncoder(os.Stdout).Encode(struct {
					sandbox.GateVerdict
					Command string `json:"command"`
					Message string `json:"message"`
				}{v, confirm.Quote(argv), checkMessage(code, d, v)})
			} else {
				fmt.Println(checkMessage(code, d, v))
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

func checkMessage(code int, d gate.Decision, v sandbox.GateVerdict) string {
	switch {
	case code == exitcode.CheckConfirm:
		return fmt.Sprintf("CONFIRM: %s (rule %s): `%s` runs only if the operator says yes", d.Reason, d.Rule, d.Command)
	case code == exitcode.CheckDenied && v.Guard != nil:
		return "DENIED: " + v.Guard.Reason
	case code == exitcode.CheckDenied:
		return d.Message()
	case v.Guard != nil:
		return "ALLOWED: no rule matched; the guard allowed it"
	}
	return "ALLOWED: no rule matched"
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
