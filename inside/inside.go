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
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/inside/idlemem"
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

// watch is the docker backend's watcher on the host, one per owner
// process, carrying each container the owner lists on its lifeline (its
// stdin): it waits in this small binary (a start of the CLI's, which links
// the Docker client, would compete with the containers' starts for the
// CPU) and starts the CLI's binary to remove what is still listed only
// when the owner died. A bad message ends its answers (the owner sees its
// watcher gone and starts another, listing everything again) but not its
// watch: what it listed is removed if the owner dies.
func watch(spec protocol.Watch, stdio sandboxinit.Stdio) int {
	// An answer to a dead owner must fail as EPIPE, not end this process
	// (Go's default for a write to a broken stdout) before its work.
	signal.Ignore(syscall.SIGPIPE)
	// Idle between its owner's messages: it gives back what its start and
	// each message left resident.
	quiet := idlemem.NewQuiet(time.Second, 0)
	quiet.Busy()
	listed, err := ownership.Follow(stdio.In, quietWriter{stdio.Out, quiet})
	quiet.Stop()
	if err != nil {
		if c, ok := stdio.Out.(io.Closer); ok { // the owner sees its watcher gone
			_ = c.Close()
		}
		fmt.Fprintf(stdio.Err, "triage-sandbox: watcher: %v\n", err)
		_, _ = io.Copy(io.Discard, stdio.In)
	}
	if len(listed) == 0 || !ownership.OwnerDied(spec.Owner, spec.OwnerStart) {
		return 0
	}
	if err := removeOrphans(spec, listed, stdio.Err); err != nil {
		fmt.Fprintf(stdio.Err, "triage-sandbox: removing %d container(s) after their owner died: %v (run `triage-sandbox gc`)\n", len(listed), err)
		return 1
	}
	return 0
}

// quietWriter tells quiet of each write.
type quietWriter struct {
	io.Writer
	quiet *idlemem.Quiet
}

func (w quietWriter) Write(b []byte) (int, error) {
	w.quiet.Busy()
	return w.Writer.Write(b)
}

// removeOrphans runs the remover with the containers listed on its stdin.
func removeOrphans(spec protocol.Watch, listed []string, errOut io.Writer) error {
	argv, err := protocol.Argv(spec.Remover, protocol.EntryWatchRemove, spec)
	if err != nil {
		return err
	}
	var line []byte
	for _, id := range listed {
		if line, err = ownership.AppendMessage(line, ownership.Message{Op: ownership.Listed, ID: id}); err != nil {
			return err
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(line)
	cmd.Stdout, cmd.Stderr = errOut, errOut
	cmd.Dir = "/"
	return cmd.Run()
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
