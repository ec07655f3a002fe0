// Package inside dispatches the entry points that run inside a sandbox:
// the holder, the supervisor (exec), export, unpack, the local backend's
// helper and the selftest's probes; and the one that waits beside a
// container on the host, the docker backend's watcher. Both binaries call it: the CLI
// (cmd/triage-sandbox, which adds the entries that run beside a sandbox)
// and the small in-sandbox one (cmd/triage-sandbox-inside, which links
// only this). Nothing here may import the Docker client, the MCP SDK or
// cobra: their package initialisation is most of a start of the CLI, and
// the in-sandbox side starts once per sandbox or command
// (cmd/triage-sandbox-inside's test keeps that true).
package inside

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/inside/localhelper"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/inside/sandboxinit"
	"github.com/triage-sandbox/triage-sandbox/internal/fdclean"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// Entries are the entry points that run inside a sandbox, each taking
// one typed spec (package protocol) and nothing else.
func Entries(ctx context.Context, stdio sandboxinit.Stdio) map[protocol.Entry]func(args []string) int {
	return map[protocol.Entry]func(args []string) int{
		protocol.EntryHold: func(args []string) int {
			spec, err := protocol.DecodeHold(args)
			if err != nil {
				return refusedHolder(stdio, err)
			}
			return sandboxinit.RunHold(ctx, spec, stdio)
		},
		protocol.EntryExec: func(args []string) int {
			spec, err := protocol.DecodeExec(args)
			if err != nil {
				return Refused(err)
			}
			return sandboxinit.RunExec(ctx, spec, stdio)
		},
		protocol.EntryExport: func(args []string) int {
			spec, err := protocol.DecodeExport(args)
			if err != nil {
				return Refused(err)
			}
			return sandboxinit.RunExport(spec, stdio.Out, stdio.Err)
		},
		protocol.EntryUnpack: func(args []string) int {
			spec, err := protocol.DecodeUnpack(args)
			if err != nil {
				return Refused(err)
			}
			return sandboxinit.RunUnpack(spec, stdio.In, stdio.Err)
		},
		protocol.EntryLocal: func(args []string) int {
			spec, err := protocol.DecodeLocal(args)
			if err != nil {
				return refusedHolder(stdio, err)
			}
			return localhelper.RunHelper(ctx, spec, stdio)
		},
		protocol.EntryProbe: func(args []string) int {
			spec, err := protocol.DecodeProbe(args)
			if err != nil {
				return Refused(err)
			}
			return runProbe(spec, stdio)
		},
		protocol.EntryProbeChild: func(args []string) int { return probe.Child(args, stdio.Err) },
		protocol.EntryWatch: func(args []string) int {
			spec, err := protocol.DecodeWatch(args)
			if err != nil {
				return Refused(err)
			}
			return watch(spec, stdio)
		},
	}
}

// watch is a container's watcher on the host, started beside each
// container by the docker backend: it waits for the owner's lifeline in
// this small binary (a start of the CLI's, which links the Docker client,
// would compete with the container's start for the CPU) and execs the
// CLI's binary to remove the container only when the owner died without
// removing it.
func watch(spec protocol.Watch, stdio sandboxinit.Stdio) int {
	if !ownership.OwnerGone(stdio.In, spec.Owner, spec.OwnerStart) {
		return 0
	}
	argv, err := protocol.Argv(spec.Remover, protocol.EntryWatchRemove, spec)
	if err == nil {
		err = syscall.Exec(argv[0], argv, os.Environ())
	}
	fmt.Fprintf(stdio.Err, "triage-sandbox: removing container %.12s after its owner died: %v (run `triage-sandbox gc`)\n", spec.Container, err)
	return 1
}

// Stdio is the process's own standard streams.
func Stdio() sandboxinit.Stdio {
	return sandboxinit.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
}

// Prepare is what every start of either binary does first: nothing of
// the caller's crosses by inheritance, so no process started from here
// (helper, holder, supervisor, command) gets a descriptor that was not
// passed to it on purpose.
func Prepare() error { return fdclean.CloseOnExecAbove(2) }

// Run runs args[0] when it names one of entries; ok is false when it does
// not (or args is empty).
func Run(entries map[protocol.Entry]func(args []string) int, args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	run, ok := entries[protocol.Entry(args[0])]
	if !ok {
		return 0, false
	}
	return run(args[1:]), true
}

// runProbe runs a selftest probe's plan; its children are this binary.
func runProbe(spec protocol.Probe, stdio sandboxinit.Stdio) int {
	self, err := os.Executable()
	if err != nil {
		return Refused(err)
	}
	return probe.Execute(spec.Plan, self, stdio.Out, stdio.Err)
}

// refusedHolder is Refused for a holder (or the local helper), which the
// host awaits by its status lines: it says why also as a status, carrying
// this binary's protocol version, so a host of another build names the
// mismatch instead of waiting for the holder's end.
func refusedHolder(stdio sandboxinit.Stdio, err error) int {
	_ = protocol.WriteStatus(stdio.Out, protocol.Status{State: protocol.StateHolderFailed, Detail: err.Error()})
	return Refused(err)
}

// Refused reports an entry's failure before it ran: one line, exit 125.
func Refused(err error) int {
	fmt.Fprintf(os.Stderr, "triage-sandbox: %v\n", err)
	return exitcode.Refused
}
