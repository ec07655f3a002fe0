package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/probe"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/sandboxinit"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// sandboxEntries are the entry points the binary runs inside (or beside) a
// sandbox, and the keeper that holds sandboxes for sessions and pools. They are dispatched before any CLI is built: each takes one
// typed spec (package protocol) and nothing else.
func sandboxEntries() map[protocol.Entry]func(args []string) int {
	stdio := sandboxinit.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	ctx := context.Background()
	return map[protocol.Entry]func(args []string) int{
		protocol.EntryHold: func(args []string) int {
			spec, err := protocol.DecodeHold(args)
			if err != nil {
				return entryRefused(err)
			}
			return sandboxinit.RunHold(ctx, spec, stdio)
		},
		protocol.EntryExec: func(args []string) int {
			spec, err := protocol.DecodeExec(args)
			if err != nil {
				return entryRefused(err)
			}
			return sandboxinit.RunExec(ctx, spec, stdio)
		},
		protocol.EntryExport: func(args []string) int {
			spec, err := protocol.DecodeExport(args)
			if err != nil {
				return entryRefused(err)
			}
			return sandboxinit.RunExport(spec, os.Stdout, os.Stderr)
		},
		protocol.EntryUnpack: func(args []string) int {
			spec, err := protocol.DecodeUnpack(args)
			if err != nil {
				return entryRefused(err)
			}
			return sandboxinit.RunUnpack(spec, os.Stdin, os.Stderr)
		},
		protocol.EntryLocal: func(args []string) int {
			spec, err := protocol.DecodeLocal(args)
			if err != nil {
				return entryRefused(err)
			}
			return local.RunHelper(ctx, spec, stdio)
		},
		protocol.EntryProbe: func(args []string) int {
			spec, err := protocol.DecodeProbe(args)
			if err != nil {
				return entryRefused(err)
			}
			return runProbe(spec)
		},
		protocol.EntryProbeChild: func(args []string) int { return probe.Child(args, os.Stderr) },
		protocol.EntryWatch: func(args []string) int {
			spec, err := protocol.DecodeWatch(args)
			if err != nil {
				return entryRefused(err)
			}
			return docker.Watch(ctx, spec, os.Stdin, os.Stderr)
		},
		protocol.EntryKeeper: func(args []string) int {
			spec, err := protocol.DecodeKeeper(args)
			if err != nil {
				return entryRefused(err)
			}
			return report(keep(spec))
		},
	}
}

// runProbe runs a selftest probe's plan.
func runProbe(spec protocol.Probe) int {
	p, err := probe.DecodePlan(spec.Plan)
	if err != nil {
		return entryRefused(err)
	}
	self, err := os.Executable()
	if err != nil {
		return entryRefused(err)
	}
	return probe.Execute(p, self, os.Stdout, os.Stderr)
}

// keep is a keeper's entry point: its policy arrives as JSON on stdin.
func keep(spec protocol.Keeper) error {
	var p policy.Policy
	if err := json.NewDecoder(io.LimitReader(os.Stdin, 16<<20)).Decode(&p); err != nil {
		return fmt.Errorf("the keeper's policy: %w", err)
	}
	if p.AllowAll {
		return errors.New("allow_all has no sandbox to keep")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	b, err := builtin.Registry().New(p.Backend, backendEnv(self))
	if err != nil {
		return err
	}
	// A keeper started by a traced run traces the commands it runs.
	tr, err := phase.FromEnv("keeper")
	if err != nil {
		return err
	}
	defer tr.Close()
	ctx := phase.With(context.Background(), tr)
	return warm.Keep(ctx, warm.KeeperOptions{Dir: spec.Dir, Policy: &p, Backend: b, Log: os.Stderr})
}

// runSandboxEntry runs entry e when it is one of sandboxEntries.
func runSandboxEntry(e string, args []string) (int, bool) {
	run, ok := sandboxEntries()[protocol.Entry(e)]
	if !ok {
		return 0, false
	}
	return run(args), true
}

func entryRefused(err error) int {
	fmt.Fprintf(os.Stderr, "triage-sandbox: %v\n", err)
	return exitcode.Refused
}
