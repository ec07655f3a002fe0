package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/local"
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
	host, err := policy.CurrentHost()
	if err != nil {
		return nil, host, err
	}
	reg := builtin.Registry()
	cfg, err := sandbox.LoadConfig(f.config, host.Cwd, reg.Names())
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
	if err == nil {
		err = handOff(p.Backend)
	}
	if err != nil {
		f.early.Close()
	}
	return p, host, err
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
func printWarnings(ws []string) {
	for _, w := range ws {
		fmt.Fprintln(os.Stderr, "triage-sandbox: warning: "+output.Line(w))
	}
}

// newBackendWith makes the policy's backend with self as its init; a
// policy with a session or a pool gets its sandboxes from a keeper.
func newBackendWith(p *policy.Policy, self string) (backends.Backend, error) {
	b, err := directBackend(p, self)
	if err != nil || p.AllowAll || (p.Warm.Session == "" && p.Warm.Pool == 0) {
		return b, err
	}
	return &warm.Backend{Backend: b, SelfExe: self, Dir: warm.DefaultDir()}, nil
}

// directBackend makes the policy's backend itself, never through a keeper:
// every sandbox it starts belongs to this process.
func directBackend(p *policy.Policy, self string) (backends.Backend, error) {
	if p.AllowAll {
		return local.NewUnconfined(backends.Env{})
	}
	return builtin.Registry().New(p.Backend, backendEnv(self))
}

func backendEnv(self string) backends.Env { return backends.Env{SelfExe: self} }

// newBackend makes the policy's backend with this binary as its init.
func newBackend(p *policy.Policy, needSelf bool) (backends.Backend, error) {
	exe := ""
	if needSelf {
		var err error
		if exe, err = sandbox.SelfExe(); err != nil {
			return nil, err
		}
	} else if e, err := os.Executable(); err == nil {
		exe = e
	}
	return newBackendWith(p, exe)
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
