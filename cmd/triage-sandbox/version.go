package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/internal/buildversion"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run: func(cmd *cobra.Command, args []string) {
			_, _ = os.Stdout.WriteString(buildversion.Line())
		},
	}
}

// version is the module version and, when known, the commit.
func version() string { return buildversion.String() }
