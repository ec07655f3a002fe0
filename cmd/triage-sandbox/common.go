package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/internal/insidebin"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// policyFlags are shared by every subcommand that compiles a policy.
type policyFlags struct {
	config  string
	role    profiles.Role
	backend string
	workdir string
	session string
	// dialEarly: compileWithHost begins run's connection to its
	// session's keeper (early) once the config is read; the backend's
	// Start takes it.
	dialEarly bool
	early     *warm.Early
	// host, when set, gives the host facts (a front's working directory);
	// CurrentHost otherwise.
	host func() (policy.Host, error)
	// fast: compiled in a keeper for a front, which must never be
	// replaced by another binary (a hand-off falls back instead).
	fast bool
	// cache, when set (a keeper's, for fronts), keeps compiles while
	// their inputs are unchanged (compilecache.go); red is the redactor
	// it kept or built, cacheHit says the policy came from it, cacheWhy
	// why a fresh compile was not kept.
	cache    *compileCache
	red      *output.Redactor
	kept     *derived
	cacheHit bool
	cacheWhy string
}

func (f *policyFlags) register(cmd *cobra.Command, defaultRole profiles.Role) {
	cmd.Flags().StringVar(&f.config, "config", "", "triage.toml to read (default: nearest triage.toml from the current directory up)")
	cmd.Flags().StringVar((*string)(&f.role), "role", string(defaultRole), "agent or reproducer")
	addBackendFlag(cmd, &f.backend, "")
}

func (f *policyFlags) compile() (*policy.Policy, error) {
	p, _, err := f.compileWithHost()
	return p, err
}

// compileWithHost also returns the host facts (the caller's environment),
// which redaction needs.
func (f *policyFlags) compileWithHost() (*policy.Policy, policy.Host, error) {
	if f.role.Validate() != nil {
		return nil, policy.Host{}, fmt.Errorf("--role %q: use %s or %s", string(f.role), profiles.RoleAgent, profiles.RoleReproducer)
	}
	hostOf := f.host
	if hostOf == nil {
		hostOf = policy.CurrentHost
	}
	host, err := hostOf()
	if err != nil {
		return nil, host, err
	}
	if f.cache != nil {
		return f.compileWithCache(f.cache, host)
	}
	return f.compileFor(host)
}

// compileFor is compileWithHost on host.
func (f *policyFlags) compileFor(host policy.Host) (*policy.Policy, policy.Host, error) {
	reg := builtin.Registry()
	cfg, err := sandbox.LoadConfigReading(host.Reads, f.config, host.Cwd, reg.Names())
	if err != nil {
		return nil, host, err
	}
	if f.dialEarly && f.session != "" {
		// The keeper wakes while the policy is built; the policy then
		// decides whether this connection is the one to use.
		if root, err := canonical(cfg.Root); err == nil {
			f.early = warm.DialEarly(warm.DefaultDir(), root, f.role, f.session)
		}
	}
	p, err := sandbox.Build(reg, cfg, f.role, host, policy.Options{Backend: f.backend, Workdir: f.workdir, Session: f.session})
	if err == nil && f.fast {
		if backend, _, _ := handOffTarget(reg, p); backend != "" {
			err = &fallbackError{"the " + backend + " backend is another binary's"}
		}
	}
	if err == nil {
		err = handOff(reg, p)
	}
	if err != nil {
		f.early.Close()
	}
	return p, host, err
}

// configPath is the triage.toml this command reads (absolute; "" for
// the built-in defaults), for the report of a run refused before a policy
// existed: the file was found even when it could not be used.
func (f *policyFlags) configPath(cwd string) string {
	if f.config != "" {
		if abs, err := filepath.Abs(f.config); err == nil {
			return abs
		}
		return f.config
	}
	p, _ := config.Find(cwd)
	return p
}

// canonical is path absolute with no symlink, as the policy's workspace
// root.
func canonical(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// printWarnings shows what the library returned for the user, each on one
// line and neutralised (a warning may name a file the sandbox chose).
func printWarnings(ws []string) { printWarningsTo(os.Stderr, ws) }

// printWarningsTo is printWarnings on out.
func printWarningsTo(out io.Writer, ws []string) {
	for _, w := range ws {
		fmt.Fprintln(out, "triage-sandbox: warning: "+output.Line(w))
	}
}

// newBackendWith makes the policy's backend with self as its init; a
// policy with a session or a pool gets its sandboxes from a keeper.
func newBackendWith(ctx context.Context, p *policy.Policy, self string) (backends.Backend, error) {
	b, err := directBackend(ctx, p, self)
	if err != nil || p.AllowAll || (p.Warm.Session == "" && p.Warm.Pool == 0) {
		return b, err
	}
	return &warm.Backend{Backend: b, SelfExe: self, Dir: warm.DefaultDir()}, nil
}

// directBackend makes the policy's backend itself, never through a keeper:
// every sandbox it starts belongs to this process.
func directBackend(ctx context.Context, p *policy.Policy, self string) (backends.Backend, error) {
	if p.AllowAll {
		return local.NewUnconfined(backends.Env{})
	}
	env, err := backendEnv(ctx, self)
	if err != nil {
		return nil, err
	}
	return builtin.Registry().New(p.Backend, env)
}

// backendEnv is what backends run: self beside sandboxes, and inside them
// the small triage-sandbox-inside when it provably matches self (package
// insidebin), else self. The trace says which (inside.separate or
// inside.fallback); so does a warning when TRIAGE_SANDBOX_INSIDE named the
// one not used.
func backendEnv(ctx context.Context, self string) (backends.Env, error) {
	c, err := chooseInside(self)
	if err != nil {
		return backends.Env{}, err
	}
	if c.Separate {
		phase.Mark(ctx, "inside.separate")
	} else {
		phase.Mark(ctx, "inside.fallback")
		if os.Getenv(insidebin.EnvVar) != "" {
			// Named on purpose, so not replaced without a word.
			printWarnings([]string{insidebin.EnvVar + ": " + c.Why + "; running " + self + " inside sandboxes instead"})
		}
	}
	return backends.Env{SelfExe: self, InsideExe: c.Path}, nil
}

// chooseInside is insidebin.Choose for self, this process's environment.
func chooseInside(self string) (insidebin.Choice, error) {
	if self == "" {
		return insidebin.Choice{Why: "no triage-sandbox binary"}, nil
	}
	info, err := insidebin.SelfInfo(self)
	if err != nil {
		info = nil // Choose falls back, saying so
	}
	return insidebin.Choose(self, info, os.Getenv)
}

// newBackend makes the policy's backend with this binary as its init.
func newBackend(ctx context.Context, p *policy.Policy, needSelf bool) (backends.Backend, error) {
	exe := ""
	if needSelf {
		var err error
		if exe, err = sandbox.SelfExe(); err != nil {
			return nil, err
		}
	} else if e, err := os.Executable(); err == nil {
		exe = e
	}
	return newBackendWith(ctx, p, exe)
}

// dockerBackend connects to the daemon for commands that manage docker
// itself (image build) rather than run a policy.
func dockerBackend(cmd *cobra.Command) (*docker.Backend, error) {
	b, err := docker.New(backends.Env{})
	if err != nil {
		return nil, err
	}
	d := b.(*docker.Backend)
	if err := d.Available(cmd.Context()); err != nil {
		return nil, err
	}
	return d, nil
}
