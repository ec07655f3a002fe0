// Package mcpserver is `triage-sandbox mcp`: a Model Context Protocol
// server that gives an agent a sandboxed shell for one workspace. Its tools
// run a command in a role, judge a command without running it, and end an
// agent session. Every command takes the path `run` takes (sandbox.Run,
// or Session.Exec for a session), and the result is `run --json`'s object.
//
// What the agent sends chooses a command, a role, a timeout no longer
// than the role's, a working directory and a session name; never the
// policy, the role table, the backend or the gate: the config is read once,
// when the server starts. A refused command (the gate, a bad argument) is a
// tool result the model reads, not a protocol error.
//
// Sessions live in this process (not in a detached keeper as `run
// --session`'s do): the server owns their sandboxes, so they end when it
// ends, and the backends' owner-death rules (docker's watcher, the sweep of
// a dead owner's state) remove them when it is killed.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// Options configure a server; all of it is fixed for the server's life.
type Options struct {
	// Registry names the backends a config may choose.
	Registry *backends.Registry
	// ConfigFlag is --config ("" finds triage.toml from Host.Cwd up).
	ConfigFlag string
	// Backend is --backend ("" lets TRIAGE_SANDBOX, then the config, decide).
	Backend string
	// Host is the server's own facts (environment, home, cwd).
	Host policy.Host
	// NewBackend makes the backend a policy runs on. It must not start
	// detached keepers: a sandbox must not outlive the server.
	NewBackend func(p *policy.Policy) (backends.Backend, error)
	// Version is reported to clients.
	Version string
}

// Server serves one workspace.
type Server struct {
	o   Options
	cfg *config.File
	// base outlives single calls: sessions start under it.
	base context.Context

	mu       sync.Mutex
	backends map[string]backends.Backend
	// rolePolicies are the roles' policies as compiled at the start.
	rolePolicies []*policy.Policy
	sessions     *sessions
	// starting bounds the sandboxes being started at once, by sessions
	// and by runs without one; runs the runs without a session.
	starting, runs slots
}

// New reads the config once and checks that both roles compile, so a bad
// config stops the server at its start with one line, not each call.
func New(ctx context.Context, o Options) (*Server, error) {
	if o.Registry == nil || o.NewBackend == nil {
		return nil, errors.New("mcpserver: a registry and a backend factory are required")
	}
	cfg, err := sandbox.LoadConfig(o.ConfigFlag, o.Host.Cwd, o.Registry.Names())
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, cfg: cfg, base: ctx, backends: map[string]backends.Backend{}}
	l, starting, runs := bounds(cfg)
	s.starting, s.runs = make(slots, starting), make(slots, runs)
	s.sessions = newSessions(l, s.starting)
	for _, role := range []profiles.Role{profiles.RoleAgent, profiles.RoleReproducer} {
		p, err := s.policy(role, "", "")
		if err != nil {
			return nil, fmt.Errorf("the %s role: %w", role, err)
		}
		s.rolePolicies = append(s.rolePolicies, p)
	}
	return s, nil
}

// Policies are the roles' policies as compiled at the start (their
// backend: the flag, then TRIAGE_SANDBOX, then the config), for the
// caller to hand the server over to the binary that has their backends
// compiled in before it serves.
func (s *Server) Policies() []*policy.Policy { return slices.Clone(s.rolePolicies) }

// WorkspaceRoot is the workspace the server serves.
func (s *Server) WorkspaceRoot() string { return s.cfg.Root }

// Run serves t until the client goes away or ctx ends, then ends every
// session.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	expiring, stop := context.WithCancel(ctx)
	go s.sessions.expire(expiring, expireEvery(s.sessions.limits.idle))
	err := s.MCP().Run(ctx, t)
	stop()
	s.Close()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Close ends every session and waits until their sandboxes are gone.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.base), time.Minute)
	defer cancel()
	s.sessions.endAll(ctx)
}

// MCP is the protocol server with the tools registered.
func (s *Server) MCP() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "triage-sandbox", Title: "triage-sandbox", Version: s.o.Version},
		&mcp.ServerOptions{Instructions: instructions(s.cfg.Root, s.sessions.limits.maxSessions)})
	s.addTools(srv)
	return srv
}

// bounds are [sandbox.mcp]'s bounds, or their defaults, and the agent
// role's idle time (sessions are the agent's): the sessions' limits, the
// starts and the runs without a session at once.
func bounds(cfg *config.File) (l limits, starting, runs int) {
	where := cfg.Path
	if where == "" {
		where = "a triage.toml at " + cfg.Root
	}
	l = limits{maxSessions: DefaultMaxSessions, where: "the default; [sandbox.mcp] max_sessions in " + where + " sets it",
		idle: policy.DefaultWarmIdle}
	if m := cfg.MCP.MaxSessions; m != nil {
		l.maxSessions, l.where = int(*m), "[sandbox.mcp] max_sessions in "+where
	}
	if sec := cfg.Resolve(profiles.RoleAgent).WarmIdle; sec != nil {
		l.idle = time.Duration(*sec) * time.Second
	}
	starting, runs = DefaultMaxStarting, DefaultMaxRuns
	if m := cfg.MCP.MaxStarting; m != nil {
		starting = int(*m)
	}
	if m := cfg.MCP.MaxRuns; m != nil {
		runs = int(*m)
	}
	return l, starting, runs
}

// policy builds role's policy from the config read at start; only the
// working directory and the session name come from the call.
func (s *Server) policy(role profiles.Role, workdir, session string) (*policy.Policy, error) {
	p, err := sandbox.Build(s.o.Registry, s.cfg, role, s.o.Host, policy.Options{Backend: s.o.Backend, Workdir: workdir, Session: session})
	if err != nil {
		return nil, err
	}
	// A pool's keeper would outlive the server: here every reproducer run
	// gets a sandbox of its own, started and removed by this process.
	if p.Warm.Session == "" {
		p.Warm = policy.Warm{}
	}
	return p, nil
}

// backend is the policy's backend, made once per backend.
func (s *Server) backend(p *policy.Policy) (backends.Backend, error) {
	key := fmt.Sprintf("%s/%v", p.Backend, p.AllowAll)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.backends[key]; ok {
		return b, nil
	}
	b, err := s.o.NewBackend(p)
	if err != nil {
		return nil, err
	}
	s.backends[key] = b
	return b, nil
}

func instructions(root string, maxSessions int) string {
	return "A sandboxed shell for the workspace " + root + ". Every command runs in a sandbox " +
		"without network, credentials or write access outside the role's writable paths; the gate " +
		"refuses dangerous commands. A denied command must not be retried in another form. " +
		"Use role reproducer for issue reproducers (a fresh sandbox each run) and role agent with a " +
		"session name to keep files in HOME and scratch between commands; at most " + strconv.Itoa(maxSessions) +
		" sessions run at once, so reuse one, and end one you no longer need with end_session."
}
