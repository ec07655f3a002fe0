package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/inside"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	kmsg "github.com/triage-sandbox/triage-sandbox/protocol/keeper"
	"github.com/triage-sandbox/triage-sandbox/warm"
	"github.com/triage-sandbox/triage-sandbox/warm/fastpath"
)

// sandboxEntries are the entry points the binary runs inside a sandbox
// (package inside: the small in-sandbox binary runs the same ones), and
// those it runs beside one: the docker backend's watcher's remover and the keeper
// that holds sandboxes for sessions and pools. They are dispatched before
// any CLI is built: each takes one typed spec (package protocol) and
// nothing else.
func sandboxEntries() map[protocol.Entry]func(args []string) int {
	ctx := context.Background()
	entries := inside.Entries(ctx, inside.Stdio())
	entries[protocol.EntryWatchRemove] = func(args []string) int {
		spec, err := protocol.DecodeWatchRemove(args)
		if err != nil {
			return inside.Refused(err)
		}
		return docker.RemoveOrphans(ctx, spec, os.Stdin, os.Stderr)
	}
	entries[protocol.EntryKeeper] = func(args []string) int {
		spec, err := protocol.DecodeKeeper(args)
		if err != nil {
			return inside.Refused(err)
		}
		return report(keep(spec))
	}
	return entries
}

// keep is a keeper's entry point: its policy arrives as JSON on stdin.
func keep(spec protocol.Keeper) error {
	p, err := kmsg.ReadPolicy(os.Stdin)
	if err != nil {
		return err
	}
	if p.AllowAll {
		return errors.New("allow_all has no sandbox to keep")
	}
	self, err := os.Executable()
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
	env, err := backendEnv(ctx, self)
	if err != nil {
		return err
	}
	b, err := builtin.Registry().New(p.Backend, env)
	if err != nil {
		return err
	}
	// A front's `run --session` of this keeper's session runs here, as
	// this binary's `run` would (fast.go).
	selfID, _ := fastpath.FileID("/proc/self/exe")
	mine := warm.Keeping(p)
	fast := func(ctx context.Context, req fastpath.Request, here *warm.Here, stdout, stderr io.Writer) (int, string) {
		return runFast(ctx, selfID, mine, here, req, stdout, stderr)
	}
	return warm.Keep(ctx, warm.KeeperOptions{Dir: spec.Dir, Policy: p, Backend: b, Log: os.Stderr, Fast: fast})
}
