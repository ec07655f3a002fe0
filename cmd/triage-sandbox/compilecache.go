package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"slices"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/hostread"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// compileCache is a keeper's record of the policies it compiled for
// fronts (fast.go): each kept with what `run` derives from it and the
// host alone (the redactor), and reused while the inputs are exactly
// those of the compile: the same CLI, flags, working directory and
// environment (the key), and every path the compile looked at unchanged
// (package hostread: the compiler lists what it read; a path it reads
// without the recorder is a defect the strace test finds). A miss, or
// anything in doubt, compiles afresh as the CLI would.
type compileCache struct {
	// cli is the identity of the binary that compiles (fastpath.FileID):
	// another build may compile another policy.
	cli   string
	cache hostread.Cache[compiled]
	// caps is what the compile asked of the backend's capabilities
	// (the registry's): asked again at every use, since a backend may
	// probe the host for them (local: the cgroup hierarchy) outside the
	// compiler's recorder.
	caps func(backend string) ([]policy.Capability, bool)
}

// compiled is one compile's result.
type compiled struct {
	p    *policy.Policy
	red  *output.Redactor
	caps []policy.Capability
	// kept is what later uses derive from p alone, kept with it.
	kept *derived
}

// derived is what is computed from a kept policy alone, once: its gate
// (sandbox.NewGatekeeper; not kept with the guard on, which reads its
// key file outside the recorder: the fast path falls back then anyway)
// and whether it is the keeper's own (fastCheck.mine: the keeper's policy
// does not change while it runs).
type derived struct {
	// p is the kept policy itself, never a run's copy.
	p        *policy.Policy
	gateOnce sync.Once
	gk       *sandbox.Gatekeeper
	gkErr    error
	mineOnce sync.Once
	mine     bool
	// hash is p.Hash(), computed once: a run's audit record and report
	// name it, and hashing the policy (JSON and SHA-256) was a tenth of a
	// keeper's CPU per session command. It holds for a run's copy
	// because the kept compile is reused only while every input is
	// unchanged (compileCache.get), and nothing on run's path writes to
	// a policy: the run gets its own copy (get), and between the compile
	// and the audit record only the docker backend's start writes one
	// field (Runtime), on its start's own copy, never in a keeper. A
	// recompile keeps a new derived, hence a new hash
	// (TestKeptHashIsTheRunsHash).
	hashOnce sync.Once
	hash     string
	// warmHash is p.WarmHash(), alike: the keeper's backend checks
	// with it that the run's policy is its own (warm.Here.Start).
	warmOnce sync.Once
	warmHash string
}

// keptWarmHash is p.WarmHash() of a kept compile, computed once; empty
// without one (whoever needs it then computes it).
func (f *policyFlags) keptWarmHash() string {
	d := f.kept
	if d == nil {
		return ""
	}
	d.warmOnce.Do(func() { d.warmHash = d.p.WarmHash() })
	return d.warmHash
}

// policyHash is p.Hash(): the kept compile's, computed once, else p's.
func (f *policyFlags) policyHash(p *policy.Policy) string {
	d := f.kept
	if d == nil {
		return p.Hash()
	}
	d.hashOnce.Do(func() { d.hash = d.p.Hash() })
	return d.hash
}

// isMine is mine(p), asked once for a kept compile (d nil: every time).
func (d *derived) isMine(mine func(*policy.Policy) bool, p *policy.Policy) bool {
	if d == nil {
		return mine(p)
	}
	d.mineOnce.Do(func() { d.mine = mine(d.p) })
	return d.mine
}

// gatekeeper is p's gate: the kept compile's, else a new one.
func (f *policyFlags) gatekeeper(p *policy.Policy) (*sandbox.Gatekeeper, error) {
	d := f.kept
	if d == nil || p.Gate.Guard.Enabled {
		return sandbox.NewGatekeeper(p)
	}
	d.gateOnce.Do(func() { d.gk, d.gkErr = sandbox.NewGatekeeper(d.p) })
	return d.gk, d.gkErr
}

// key is everything a compile reads that is not a file: the CLI, the
// flags that reach the compiler, and the host facts (working directory,
// environment in order, home, ids, OS).
func (c *compileCache) key(f *policyFlags, host policy.Host) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, s := range []string{c.cli, f.config, string(f.role), f.backend, f.workdir, f.session,
		host.Cwd, host.Home, host.OS} {
		field(s)
	}
	ints(h, int64(host.UID), int64(host.GID), int64(len(host.Env)))
	for _, kv := range host.Env {
		field(kv)
	}
	return string(h.Sum(nil))
}

func ints(h hash.Hash, vs ...int64) {
	for _, v := range vs {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
}

// get is the kept compile for f on host, a copy of its policy (so a run
// never changes what the next one gets).
func (c *compileCache) get(f *policyFlags, host policy.Host) (*policy.Policy, *output.Redactor, *derived, bool) {
	v, ok := c.cache.Get(c.key(f, host), func(v compiled) bool {
		caps, _ := c.capsOf(v.p.Backend)
		return slices.Equal(caps, v.caps)
	})
	if !ok {
		return nil, nil, nil, false
	}
	q := *v.p
	return &q, v.red, v.kept, true
}

// compileWithCache is compileWithHost through c: a hit returns the kept
// policy; a miss compiles (compileRecorded) and keeps the result when
// every input had settled (hostread.Cache.Put).
func (f *policyFlags) compileWithCache(c *compileCache, host policy.Host) (*policy.Policy, policy.Host, error) {
	if p, red, kept, ok := c.get(f, host); ok {
		f.red, f.kept, f.cacheHit = red, kept, true
		return p, host, nil
	}
	key := c.key(f, host)
	began := time.Now()
	// The capabilities before and after the compile: one that changed
	// meanwhile leaves a policy built on either, so it is not kept.
	before := map[string][]policy.Capability{}
	for _, name := range builtin.Registry().Names() {
		before[name], _ = c.capsOf(name)
	}
	p, red, reads, host, err := f.compileRecorded(host)
	if err != nil {
		return p, host, err
	}
	f.red = red
	caps, _ := c.capsOf(p.Backend)
	if !slices.Equal(caps, before[p.Backend]) {
		f.cacheWhy = "the " + p.Backend + " backend's capabilities changed during the compile"
		return p, host, nil
	}
	f.kept = &derived{p: p}
	if f.cacheWhy = c.cache.Put(key, began, reads, compiled{p: p, red: red, caps: caps, kept: f.kept}); f.cacheWhy != "" {
		f.kept = nil
		return p, host, nil
	}
	q := *p
	return &q, host, nil
}

// compileRecorded compiles with a recorder and builds the redactor
// through it (it looks paths up too): the policy, its redactor and every
// path both looked at.
func (f *policyFlags) compileRecorded(host policy.Host) (*policy.Policy, *output.Redactor, []hostread.Read, policy.Host, error) {
	host.Reads = &hostread.Recorder{}
	p, host, err := f.compileFor(host)
	if err != nil {
		reads := host.Reads.Reads()
		host.Reads = nil
		return p, nil, reads, host, err
	}
	red := newRedactor(p, host)
	reads := host.Reads.Reads()
	host.Reads = nil
	return p, red, reads, host, nil
}

// capsOf is the registry's capabilities of backend, as Build asks them.
func (c *compileCache) capsOf(backend string) ([]policy.Capability, bool) {
	if c.caps != nil {
		return c.caps(backend)
	}
	return builtin.Registry().Capabilities(backend)
}

// newRedactor is run's redactor for p: the caller's secrets and the
// default rules.
func newRedactor(p *policy.Policy, host policy.Host) *output.Redactor {
	return output.NewRedactor(sandbox.Secrets(p, host), output.DefaultRules())
}

// redactor is the redactor the compile kept, else a new one.
func (f *policyFlags) redactor(p *policy.Policy, host policy.Host) *output.Redactor {
	if f.red != nil {
		return f.red
	}
	return newRedactor(p, host)
}

// markCache says in the trace whether the compile was a kept one.
func markCache(ctx context.Context, f *policyFlags) {
	switch {
	case f.cache == nil:
	case f.cacheHit:
		phase.Mark(ctx, "policy.cache.hit")
	case f.cacheWhy != "":
		phase.Mark(ctx, "policy.cache.unkept")
	default:
		phase.Mark(ctx, "policy.cache.miss")
	}
}
