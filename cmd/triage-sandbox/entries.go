package main

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/inside"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
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

// keep is the keeper host's entry point (warm.Host): the keepers it hosts
// come with their policies over its control socket.
func keep(spec protocol.Keeper) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// A host started by a traced run traces the commands its keepers run
	// (the trace variable is part of its environment, so of its key).
	tr, err := phase.FromEnv("keeper")
	if err != nil {
		return err
	}
	defer tr.Close()
	ctx := phase.With(context.Background(), tr)
	selfID, _ := fastpath.FileID("/proc/self/exe")
	kb := &keeperBackends{self: self, made: map[string]backends.Backend{}}
	keeper := func(ctx context.Context, p *policy.Policy) (warm.KeeperOptions, error) {
		if p.AllowAll {
			return warm.KeeperOptions{}, errors.New("allow_all has no sandbox to keep")
		}
		b, err := kb.of(ctx, p.Backend)
		if err != nil {
			return warm.KeeperOptions{}, err
		}
		// A front's `run --session` of this keeper's session, or its `run`
		// of this keeper's pool, runs here, as this binary's `run` would
		// (fast.go).
		check := fastCheck{mine: warm.Keeping(p), pool: p.Warm.Session == ""}
		// One per keeper: compiles for its fronts, kept while their
		// inputs are unchanged (compilecache.go).
		cache := &compileCache{cli: selfID}
		fast := func(ctx context.Context, req fastpath.Request, here *warm.Here, stdout, stderr io.Writer) (int, string) {
			return runFast(ctx, selfID, check, here, cache, req, stdout, stderr)
		}
		return warm.KeeperOptions{Backend: b, Fast: fast}, nil
	}
	return warm.Host(ctx, warm.HostOptions{Dir: spec.Dir, Key: spec.Host, Log: os.Stderr, Keeper: keeper})
}

// keeperBackends are a host's backends, one per name, shared by its
// keepers: every keeper of a host has the host's environment, so a
// backend's settings (its client, its runtime, the inside binary) are the
// same for all of them, and one client serves them all.
type keeperBackends struct {
	self string
	mu   sync.Mutex
	env  *backends.Env
	made map[string]backends.Backend
}

func (kb *keeperBackends) of(ctx context.Context, name string) (backends.Backend, error) {
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if b, ok := kb.made[name]; ok {
		return b, nil
	}
	if kb.env == nil {
		env, err := backendEnv(ctx, kb.self)
		if err != nil {
			return nil, err
		}
		kb.env = &env
	}
	b, err := builtin.Registry().New(name, *kb.env)
	if err != nil {
		return nil, err
	}
	kb.made[name] = b
	return b, nil
}
