package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/runproxy"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

func newGCCmd() *cobra.Command {
	var only string
	cmd := &cobra.Command{
		Use:   "gc [--backend B]",
		Short: "Remove leftover sandboxes of every backend (owner process gone or lifetime passed)",
		Long: "Remove leftover sandboxes of every backend (owner process gone or lifetime passed).\n" +
			"A backend compiled into another binary (kubernetes) is swept by that binary, found beside\n" +
			"this one or on PATH; without it, gc says so in one line.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := builtin.Registry()
			names := reg.Names()
			if only != "" {
				if !slices.Contains(names, only) {
					return refuse(fmt.Errorf("--backend %q: choose one of %s", only, strings.Join(names, ", ")))
				}
				names = []string{only}
			}
			self, _ := os.Executable()
			var errs []error
			total, reached := 0, 0
			for _, name := range names {
				n, ok, err := sweepBackend(cmd.Context(), reg, name, self, os.Stdout)
				total += n
				if ok {
					reached++
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", name, err))
				}
			}
			if only == "" {
				errs = append(errs, sweepHostState())
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
	cmd.Flags().StringVar(&only, "backend", "", "sweep only this backend (the binary that has a backend is asked this way)")
	return cmd
}

// sweepBackend removes the named backend's leftovers, here or, for one
// compiled into another binary, by that binary. reached: the backend
// could be asked at all.
func sweepBackend(ctx context.Context, reg *backends.Registry, name, self string, stdout io.Writer) (removed int, reached bool, err error) {
	if bin, how := reg.Elsewhere(name); bin != "" {
		return sweepElsewhere(ctx, name, bin, how, self, stdout)
	}
	b, err := reg.New(name, backends.Env{})
	if err == nil {
		err = b.Available(ctx)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "triage-sandbox: gc: %s: skipped, it cannot run here: %v\n", name, err)
		return 0, false, nil
	}
	ids, err := b.Sweep(ctx)
	for _, id := range ids {
		fmt.Fprintf(stdout, "removed %s %s\n", name, shortName(id))
	}
	return len(ids), true, err
}

// sweepElsewhere has bin, the binary the backend is compiled into, sweep
// it (`bin gc --backend name`): its removals are passed on as this gc's,
// its refusal to run as one line. Without bin, one line says so.
func sweepElsewhere(ctx context.Context, name, bin, how, self string, stdout io.Writer) (removed int, reached bool, err error) {
	path, err := findSibling(self, bin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "triage-sandbox: gc: %s: skipped: %v; %s\n", name, err, how)
		return 0, false, nil
	}
	c := exec.CommandContext(ctx, path, "gc", "--backend", name)
	var said strings.Builder
	c.Stderr = &boundedWriter{w: &said, left: 4 << 10}
	out, err := c.StdoutPipe()
	if err != nil {
		return 0, false, err
	}
	if err := c.Start(); err != nil {
		return 0, false, fmt.Errorf("starting %s: %w", path, err)
	}
	// Our own binary, but its lines name what a cluster holds: shown
	// neutralised, and only the removals.
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "removed ") {
			fmt.Fprintln(stdout, output.Line(line))
			removed++
		}
	}
	werr := c.Wait()
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return removed, true, nil
	case errors.As(werr, &ee) && ee.ExitCode() == exitcode.Refused:
		fmt.Fprintf(os.Stderr, "triage-sandbox: gc: %s (by %s): skipped, it cannot run here: %s\n", name, path, saidLine(said.String()))
		return removed, false, nil
	default:
		return removed, true, fmt.Errorf("%s gc --backend %s: %v: %s", path, name, werr, saidLine(said.String()))
	}
}

// sweepHostState removes what dead owners left beside any backend: warm
// keepers' state and network proxy socket directories.
func sweepHostState() error {
	removed, err := warm.Sweep(warm.DefaultDir())
	removed = append(removed, runproxy.Sweep(runproxy.Base(), time.Now())...)
	for _, id := range removed {
		fmt.Fprintf(os.Stdout, "removed %s\n", id)
	}
	if err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	return nil
}

// saidLine is the last line the other binary said, neutralised.
func saidLine(s string) string {
	return output.Line(strings.TrimPrefix(lastLine(s), "triage-sandbox: "))
}

// boundedWriter keeps the first left bytes written to it.
type boundedWriter struct {
	w    io.Writer
	left int
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	if n := min(len(p), b.left); n > 0 {
		b.left -= n
		_, _ = b.w.Write(p[:n])
	}
	return len(p), nil
}

func shortName(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
