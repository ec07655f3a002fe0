package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/control"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/sandboxinit"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// newInitCmds are the hidden in-sandbox holder and exec helper.
func newInitCmds() []*cobra.Command {
	var lifeline bool
	var ttl time.Duration
	var staged []string
	controlFD := -1
	var controlSock string
	hold := &cobra.Command{
		Use:    backends.HoldSubcommand + " [--lifeline] [--ttl D] [--stage KIND:PATH]...",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := backends.ParseStagePaths(staged)
			if err != nil {
				return err
			}
			o := sandboxinit.HoldOptions{TTL: ttl, Stderr: os.Stderr, Stdout: os.Stdout, Stage: paths}
			if lifeline {
				o.Lifeline = os.Stdin
			}
			if controlFD >= 0 {
				if controlFD < 3 {
					return fmt.Errorf("--control-fd %d: must be an inherited descriptor above stderr", controlFD)
				}
				syscall.CloseOnExec(controlFD)
				self, err := os.Executable()
				if err != nil {
					return err
				}
				o.Control = os.NewFile(uintptr(controlFD), "control")
				o.Helper, o.HelperSubcommands = self, []string{backends.ExecSubcommand, backends.ExportSubcommand}
			}
			if controlSock != "" {
				// Dialled before anything else runs here: the host accepts
				// only the first connection. One that fails leaves the host
				// on docker exec, told by this line.
				conn, err := control.Dial(controlSock)
				if err != nil {
					fmt.Fprintf(os.Stdout, "%s: %v\n", docker.ControlUnavailable, err)
				} else if self, serr := os.Executable(); serr == nil {
					o.ControlConn = conn
					o.Helper, o.HelperSubcommands = self, []string{backends.ExecSubcommand, backends.ExportSubcommand}
				} else {
					_ = conn.Close()
				}
			}
			o.SweepLeftovers = true
			return exitCode(sandboxinit.Hold(context.Background(), o))
		},
	}
	hold.Flags().BoolVar(&lifeline, "lifeline", false, "kill everything when stdin closes")
	hold.Flags().DurationVar(&ttl, "ttl", 0, "kill everything after this long, whatever else happens")
	hold.Flags().StringArrayVar(&staged, "stage", nil, "a staged path to unpack from stdin first")
	hold.Flags().IntVar(&controlFD, "control-fd", -1, "serve the host's commands on this inherited control socket")
	hold.Flags().StringVar(&controlSock, "control-sock", "", "dial the host's control socket here and serve its commands")

	var exported []string
	var exportMax int
	export := &cobra.Command{
		Use:    backends.ExportSubcommand + " --stage KIND:PATH...",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := backends.ParseStagePaths(exported)
			if err != nil {
				return err
			}
			return sandboxinit.Export(os.Stdout, paths, exportMax)
		},
	}
	export.Flags().StringArrayVar(&exported, "stage", nil, "a staged path to export")
	export.Flags().IntVar(&exportMax, "max-entries", 0, "export nothing when a staged directory holds more entries than this")

	var execLifeline bool
	var timeout, grace time.Duration
	var exportFD int
	var execStaged []string
	var execSeccomp string
	var execMax int
	exec := &cobra.Command{
		Use:    backends.ExecSubcommand + " [--lifeline] [--timeout D] [--grace D] -- CMD [ARG...]",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := exportTo(exportFD, execStaged)
			if err != nil {
				return err
			}
			return exitCode(sandboxinit.Exec(context.Background(), sandboxinit.ExecOptions{
				ExportTo: o.to, Stage: o.paths, MaxEntries: execMax,
				Argv: args, Timeout: timeout, Grace: grace, Lifeline: execLifeline,
				Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Seccomp: execSeccomp,
			}))
		},
	}
	exec.Flags().BoolVar(&execLifeline, "lifeline", false, "stdin is a lifeline: kill the command's tree when it closes")
	exec.Flags().DurationVar(&timeout, "timeout", 0, "kill the command's tree after this long")
	exec.Flags().DurationVar(&grace, "grace", time.Second, "between SIGTERM and SIGKILL at the timeout")
	exec.Flags().IntVar(&exportFD, "export-fd", -1, "write the staged paths to this inherited descriptor once the command is gone")
	exec.Flags().StringArrayVar(&execStaged, "stage", nil, "a staged path to export (with --export-fd)")
	exec.Flags().IntVar(&execMax, "max-entries", 0, "with --export-fd: export nothing when a staged directory holds more entries than this")
	exec.Flags().StringVar(&execSeccomp, "seccomp", "", "load this seccomp filter set before starting the command")
	exec.Flags().SetInterspersed(false)
	return []*cobra.Command{hold, exec, export, newLocalHelperCmd()}
}

func exitCode(code int) error {
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

type exportTarget struct {
	to    io.WriteCloser
	paths []stage.Path
}

// exportTo opens the inherited descriptor the runtime passed (runc exec
// --preserve-fds) and marks it close-on-exec at once, so the command never
// inherits it.
func exportTo(fd int, values []string) (exportTarget, error) {
	if fd < 0 {
		return exportTarget{}, nil
	}
	if fd < 3 {
		return exportTarget{}, fmt.Errorf("--export-fd %d: must be an inherited descriptor above stderr", fd)
	}
	syscall.CloseOnExec(fd)
	paths, err := backends.ParseStagePaths(values)
	if err != nil {
		return exportTarget{}, err
	}
	return exportTarget{to: os.NewFile(uintptr(fd), "export"), paths: paths}, nil
}

// newLocalHelperCmd is the local backend's helper: confine, then hold.
func newLocalHelperCmd() *cobra.Command {
	var o local.HelperOptions
	var staged []string
	c := &cobra.Command{
		Use:    local.HelperSubcommand + " --plan-fd N --control-fd N [--lifeline] [--ttl D] [--stage KIND:PATH]...",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := backends.ParseStagePaths(staged)
			if err != nil {
				return err
			}
			o.Stage, o.Stdin, o.Stdout, o.Stderr = paths, os.Stdin, os.Stdout, os.Stderr
			return exitCode(local.RunHelper(context.Background(), o))
		},
	}
	c.Flags().IntVar(&o.PlanFD, "plan-fd", -1, "read the confinement plan from this inherited descriptor")
	c.Flags().IntVar(&o.ControlFD, "control-fd", -1, "serve the host's commands on this inherited control socket")
	c.Flags().BoolVar(&o.Lifeline, "lifeline", false, "kill everything when stdin closes")
	c.Flags().DurationVar(&o.TTL, "ttl", 0, "kill everything after this long, whatever else happens")
	c.Flags().StringArrayVar(&staged, "stage", nil, "a staged path to unpack from stdin first")
	return c
}
