package selftest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// rolePlan is what one role's selftest runs with: the checks' Env (the
// planted canaries and the policy built on them) and the role's checks,
// split into those to run and those the backend cannot.
type rolePlan struct {
	env           *Env
	checks        []Check
	notApplicable []Result
}

// planRole plants the canaries, builds the role's policy on them and
// chooses the checks; it fills the report's header. The caller closes the
// canaries once the plan is made.
func planRole(ctx context.Context, o Options, role profiles.Role, rr *RoleReport) (_ *rolePlan, err error) {
	c, err := Plant(o.CanaryBase, o.SelfHost)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if o.AfterPlant != nil {
		o.AfterPlant(c)
	}
	p, writable, err := buildPolicy(o, c, role)
	if err != nil {
		return nil, err
	}
	describeRole(ctx, o, role, p, rr)
	checks, notApplicable := applicable(Catalogue(), role, o.Backend)
	rr.Weakened, _ = policy.Enforce(p, o.Backend.Name(), o.Backend.Capabilities())
	cluster, err := startClusterNet(ctx, o.Backend, p)
	if err != nil {
		return nil, err
	}
	if cluster == nil {
		// No network shared with other workloads: nothing of theirs to reach.
		checks = slices.DeleteFunc(checks, func(ch Check) bool { return ch.ClusterKind != "" })
	}
	return &rolePlan{env: &Env{C: c, P: p, Writable: writable, Cluster: cluster}, checks: checks, notApplicable: notApplicable}, nil
}

// describeRole fills the report's header: the policy's hash and the one the
// same config has for the real workspace and caller, the network, and the
// versions of what runs the sandbox.
func describeRole(ctx context.Context, o Options, role profiles.Role, p *policy.Policy, rr *RoleReport) {
	rr.PolicyHash = p.Hash()
	if host, err := policy.CurrentHost(); err == nil {
		if prod, err := policy.Build(o.Config, role, host, policy.Options{Backend: o.Backend.Name(), Capabilities: o.Backend.Capabilities()}); err == nil {
			rr.ProductionHash = prod.Hash()
		}
	}
	switch p.Network.Mode {
	case policy.NetworkLoopback:
		rr.Network = "network off (localhost only)"
	case policy.NetworkProxy:
		rr.Network = "network by allow-list (the host's proxy only)"
	default:
		rr.Network = "NETWORK ON"
	}
	rr.Versions = o.Backend.Describe(ctx, p)
	rr.Versions["kernel_host"] = kernelRelease()
	rr.Versions["go"] = runtime.Version()
	if o.Warm != "" {
		rr.Versions["warm"] = o.Warm
	}
}

// buildPolicy compiles the user's config for role, rooted in the canary
// workspace and checkout, against the canary home and environment. It also
// returns the configured writable paths before any test mutation: host-side
// change detection skips those and nothing else.
func buildPolicy(o Options, c *Canaries, role profiles.Role) (*policy.Policy, []string, error) {
	cfg := *o.Config
	cfg.Root = c.Root
	cfg.Project.Checkout = c.Checkout
	cfg.Project.Python = ""
	// The fake tool prefix is read-only like a node under /opt (FS-13);
	// a role's own read_only list replaces the shared one, so both get it.
	cfg.Sandbox.ReadOnly = slices.Concat(cfg.Sandbox.ReadOnly, []string{c.ToolPrefix})
	for _, sb := range []*config.Sandbox{&cfg.Agent, &cfg.Reproducer} {
		if sb.ReadOnly != nil {
			sb.ReadOnly = slices.Concat(sb.ReadOnly, []string{c.ToolPrefix})
		}
	}
	// The canary workspace is a configured one, with the user's config (as
	// config discovery will find it above a reproducer's directory).
	planted, err := plantWorkspaceConfig(o.Config, c.Root)
	if err != nil {
		return nil, nil, err
	}
	cfg.Path = planted
	env := o.BaseEnv
	if env == nil {
		for _, k := range []string{"PATH", "LANG", "TERM"} {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	env = append([]string(nil), env...)
	for k, v := range c.Env {
		env = append(env, k+"="+v)
	}
	host := policy.Host{Home: c.Home, Env: env, OS: runtime.GOOS, UID: os.Getuid(), GID: os.Getgid(), Cwd: c.Root}
	p, err := policy.Build(&cfg, role, host, policy.Options{Backend: o.Backend.Name(), Capabilities: o.Backend.Capabilities()})
	if err != nil {
		return nil, nil, err
	}
	writable := p.Writable()
	if o.Mutate != nil {
		o.Mutate(p)
	}
	return p, writable, nil
}

func plantWorkspaceConfig(cfg *config.File, root string) (string, error) {
	var body []byte
	if cfg.Path != "" {
		b, err := os.ReadFile(cfg.Path)
		if err != nil {
			return "", fmt.Errorf("reading %s for the canary workspace: %w", cfg.Path, err)
		}
		body = b
	}
	path := filepath.Join(root, config.FileName)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return "", fmt.Errorf("writing the canary workspace's config: %w", err)
	}
	return path, nil
}

// applicable splits the role's checks into those to run and those the
// backend cannot run, each reported not applicable with the reason.
func applicable(all []Check, role profiles.Role, b backends.Backend) ([]Check, []Result) {
	var run []Check
	var na []Result
	caps := b.Capabilities()
	for _, ch := range all {
		if ch.Roles != nil && !slices.Contains(ch.Roles, role) {
			continue
		}
		var why []string
		for _, r := range ch.Requires {
			if !slices.Contains(caps, r) {
				why = append(why, fmt.Sprintf("the %s backend does not enforce %s (%s)", b.Name(), r, profiles.CapabilityMeaning(r)))
			}
		}
		if len(why) == 0 {
			run = append(run, ch)
			continue
		}
		na = append(na, Result{ID: ch.ID, Name: ch.Name, Category: ch.Category, Expected: ch.Expect,
			Observed: "not applicable", Status: StatusNotApplicable, Evidence: strings.Join(why, "; ")})
	}
	return run, na
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return strings.TrimSpace(string(b))
}
