package main

import (
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/mcpserver"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

func newMCPCmd() *cobra.Command {
	var configFlag, backend string
	cmd := &cobra.Command{
		Use:   "mcp [--config F] [--backend B]",
		Short: "Serve a sandboxed shell to an agent over the Model Context Protocol (stdio)",
		Long: "Serve one workspace to an MCP client on stdin/stdout. Tools: " + mcpserver.ToolRun + " (a command in a role,\n" +
			"as `run --json` reports it), " + mcpserver.ToolCheck + " (the gate's verdict, runs nothing) and " + mcpserver.ToolEndSession + ".\n" +
			"The config is read once, at start: nothing a client sends changes the policy, the roles,\n" +
			"the backend or the gate. Sessions live in this process and end with it, even when it is killed;\n" +
			"at most [sandbox.mcp] max_sessions (default 4) are alive at once.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			host, err := policy.CurrentHost()
			if err != nil {
				return refuse(err)
			}
			self, err := sandbox.SelfExe()
			if err != nil {
				return refuse(err)
			}
			reg := builtin.Registry()
			srv, err := mcpserver.New(cmd.Context(), mcpserver.Options{
				Registry: reg, ConfigFlag: configFlag, Backend: backend, Host: host, Version: version(),
				NewBackend: func(p *policy.Policy) (backends.Backend, error) { return directBackend(cmd.Context(), p, self) },
			})
			if err != nil {
				return refuse(err)
			}
			// The roles' compiled policies, whose backends the config
			// decides too (not only the flag): one compiled into the
			// other binary hands the whole server over before it serves.
			if err := handOff(reg, srv.Policies()...); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "triage-sandbox: mcp: serving %s on stdio\n", srv.WorkspaceRoot())
			return srv.Run(cmd.Context(), &mcp.StdioTransport{})
		},
	}
	cmd.Flags().StringVar(&configFlag, "config", "", "triage.toml to read (default: nearest triage.toml from the current directory up)")
	addBackendFlag(cmd, &backend, "")
	return cmd
}
