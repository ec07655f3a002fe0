package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
)

// addBackendFlag adds --backend to cmd, its help naming every registered
// backend (purpose, when given, says what the chosen one is for), and
// lists them with their summaries in cmd's long help.
func addBackendFlag(cmd *cobra.Command, backend *string, purpose string) {
	reg := builtin.Registry()
	usage := orList(reg.Names()) + " (default: TRIAGE_SANDBOX, the config, then the OS default)"
	if purpose != "" {
		usage = purpose + ": " + usage
	}
	cmd.Flags().StringVar(backend, "backend", "", usage)
	addBackendsHelp(cmd, reg)
}

// addBackendsHelp appends every registered backend and its summary to
// cmd's long help.
func addBackendsHelp(cmd *cobra.Command, reg *backends.Registry) {
	long := cmd.Long
	if long == "" {
		long = cmd.Short
	}
	width := 0
	for _, n := range reg.Names() {
		width = max(width, len(n))
	}
	var b strings.Builder
	b.WriteString(long + "\n\nBackends:")
	for _, n := range reg.Names() {
		fmt.Fprintf(&b, "\n  %-*s  %s", width, n, reg.Summary(n))
	}
	cmd.Long = b.String()
}

// orList joins names as prose: "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
