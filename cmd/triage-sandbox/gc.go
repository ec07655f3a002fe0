package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/runproxy"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

func newGCCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove leftover sandboxes of every backend (owner process gone or lifetime passed)",
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := builtin.Registry()
			var errs []error
			total, reached := 0, 0
			for _, name := range reg.Names() {
				b, err := reg.New(name, backends.Env{})
				if err == nil {
					err = b.Available(cmd.Context())
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "triage-sandbox: gc: %s: skipped, it cannot run here: %v\n", name, err)
					continue
				}
				reached++
				removed, err := b.Sweep(cmd.Context())
				for _, id := range removed {
					fmt.Fprintf(os.Stdout, "removed %s %s\n", name, shortName(id))
				}
				total += len(removed)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", name, err))
				}
			}
			removed, err := warm.Sweep(warm.DefaultDir())
			// Dead owners' network proxy socket directories (an allow-list).
			removed = append(removed, runproxy.Sweep(runproxy.Base(), time.Now())...)
			for _, id := range removed {
				fmt.Fprintf(os.Stdout, "removed %s\n", id)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("warm: %w", err))
			}
			fmt.Fprintf(os.Stderr, "triage-sandbox: gc removed %d leftover sandbox(es)\n", total)
			if reached == 0 {
				return refuse(errors.New("gc: no backend can run here, so nothing could be checked"))
			}
			if err := errors.Join(errs...); err != nil {
				return &exitError{code: exitcode.Failed, err: err}
			}
			return nil
		},
	}
}

func shortName(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
