// Package selftest tries what a hostile reproducer would, through the very
// same Policy -> Render -> Run path as real commands, and checks that each
// attempt is blocked while ordinary work still succeeds. Every hostile probe
// has a canary and a control run outside the sandbox: a check whose control
// cannot see its canary is inconclusive, never ok.
package selftest

import (
	"context"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Options configure a selftest.
type Options struct {
	Config  *config.File
	Roles   []profiles.Role
	Backend backends.Backend
	// SelfHost is the static triage-sandbox binary on the host: it runs the
	// controls and the sentinel.
	SelfHost string
	// BaseEnv is the ordinary (non-secret) environment the canaries are added
	// to; nil means PATH, LANG and TERM from this process.
	BaseEnv []string
	// CanaryBase is where canary directories go ("" = /var/tmp).
	CanaryBase string
	// Mutate and AfterPlant let tests weaken a policy or break a canary to
	// prove that checks fail.
	Mutate     func(*policy.Policy)
	AfterPlant func(*Canaries)
	// Warm runs every phase through a warm sandbox: "session" (each phase
	// its own agent session, ended afterwards) or "pool" (each phase a
	// pooled sandbox); "" starts each cold. Backend must then be a
	// warm.Backend.
	Warm string
	// EndWarm ends the session or pool a policy used (warm.End).
	EndWarm func(*policy.Policy)
	// KeepHere runs a keeper of the policy in this process until stop
	// (warm.Backend.KeepHere): the network phase's proxy needs the
	// phase's canary hook, which no keeper process can be given. Without
	// it the network phase cannot run warm and fails.
	KeepHere func(context.Context, *policy.Policy) (stop func(), err error)
}

// warmPolicy is p as a phase runs it in the chosen warm mode.
func (o Options) warmPolicy(p *policy.Policy, tag string) *policy.Policy {
	if o.Warm == "" {
		return p
	}
	cp := *p
	switch o.Warm {
	case "session":
		cp.Warm = policy.Warm{Session: "selftest-" + tag, Idle: time.Minute}
	case "pool":
		cp.Warm = policy.Warm{Pool: 2, Idle: time.Minute}
	}
	return &cp
}

// endWarm ends what warmPolicy's policy started (a session; a pool is
// ended once the role is done).
func (o Options) endWarm(p *policy.Policy) {
	if o.Warm == "session" && o.EndWarm != nil {
		o.EndWarm(p)
	}
}

// Run runs the selftest for every role concurrently.
func Run(ctx context.Context, o Options) *Report {
	start := time.Now()
	rep := &Report{Backend: o.Backend.Name(), Roles: make([]*RoleReport, len(o.Roles))}
	var wg sync.WaitGroup
	for i, role := range o.Roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Roles[i] = runRole(ctx, o, role)
		}()
	}
	wg.Wait()
	rep.Duration = time.Since(start)
	return rep
}

// runRole runs one role's selftest in three steps: plan (plant the
// canaries, build the policy on them, choose the checks), run the phases
// (the controls on the host, then every sandbox run) and judge (each check
// on its evidence and its control).
func runRole(ctx context.Context, o Options, role profiles.Role) *RoleReport {
	start := time.Now()
	rr := &RoleReport{Role: role, Backend: o.Backend.Name()}
	defer func() { rr.Duration = time.Since(start) }()
	plan, err := planRole(ctx, o, role, rr)
	if err != nil {
		rr.Error = err.Error()
		return rr
	}
	defer plan.env.C.Close()
	defer plan.env.Cluster.close()
	if plan.env.P.AllowAll {
		rr.Results = unconfinedResults(plan.checks)
		return rr
	}
	runs, err := runPhases(ctx, o, plan, rr)
	if err != nil {
		rr.Error = err.Error()
		return rr
	}
	rr.Results, rr.Slowest = judgeRole(ctx, plan, runs)
	return rr
}

// unconfinedResults is the verdict on a policy with allow_all: every check
// fails without a run, since nothing is isolated.
func unconfinedResults(checks []Check) []Result {
	var results []Result
	for _, ch := range checks {
		results = append(results, Result{ID: ch.ID, Name: ch.Name, Category: ch.Category, Expected: ch.Expect,
			Observed: "unconfined", Status: StatusFail, Evidence: "allow_all = true: no isolation at all",
			Fix: "remove allow_all from [sandbox]: the gate never passes an unconfined sandbox"})
	}
	return results
}
