package selftest

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// judgeRole judges every check on its phase's evidence and its control,
// then adds the checks not applicable here and the guard's answers; it also
// names the probe steps that took longest.
func judgeRole(ctx context.Context, plan *rolePlan, runs *phaseRuns) ([]Result, []string) {
	var results []Result
	for _, ch := range plan.checks {
		r := runs.phases[ch.Phase]
		results = append(results, judge(plan.env, ch, r.ev, r.err, runs.controls[ch.ID]))
	}
	results = append(results, plan.notApplicable...)
	results = append(results, guardResults(ctx, plan.env.P)...)
	return results, runs.slowest()
}

// slowest names the five slowest steps of the sandbox runs, then the three
// slowest of the control run.
func (runs *phaseRuns) slowest() []string {
	var evs []*Evidence
	for _, r := range runs.phases {
		evs = append(evs, r.ev)
	}
	out := slowestSteps(evs, 5)
	for _, step := range slowestSteps(runs.controlEv, 3) {
		out = append(out, "control "+step)
	}
	return out
}

// judge turns evidence into a result.
func judge(e *Env, ch Check, ev *Evidence, runErr error, control *controlResult) Result {
	r := Result{ID: ch.ID, Name: ch.Name, Category: ch.Category, Expected: ch.Expect, Fix: ch.Fix}
	if undecided(e, ch, ev, runErr, control, &r) {
		return r
	}
	succeeded, evidence := ch.Judge(e, ev)
	r.Evidence = evidence
	r.Observed = map[bool]string{true: "allowed", false: "blocked"}[succeeded]
	if control != nil {
		r.Control = control.summary
	}
	if ch.Expect == Allowed {
		judgeAllowed(&r, succeeded, control)
	} else {
		judgeBlocked(&r, succeeded, control)
	}
	return r
}

// undecided fills r and says so where the check's own verdict cannot be
// taken: the run failed or ended under the command, the probe did not
// observe a step, the check says its evidence decides nothing, or its
// control found it does not apply here.
func undecided(e *Env, ch Check, ev *Evidence, runErr error, control *controlResult, r *Result) bool {
	var ended *endedUnderCommand
	switch {
	case ch.EndedRunEscapes && errors.As(runErr, &ended):
		// The check's own act ended the run: its verdict, not a missing one.
		r.Status, r.Observed, r.Evidence = StatusFail, "allowed", "the run ended under the command: "+ended.Error()
		return true
	case runErr != nil || ev == nil:
		r.Status, r.Observed = StatusInconclusive, "not run"
		if runErr != nil {
			r.Evidence = runErr.Error()
		}
		return true
	}
	if ch.Steps != nil && !(ch.SandboxOOMBlocks && ev.Result.WholeSandboxOOM) && unobserved(e, ch, ev, r) {
		return true
	}
	if ch.Inconclusive != nil {
		if inc, why := ch.Inconclusive(e, ev); inc {
			r.Status, r.Observed, r.Evidence = StatusInconclusive, "not decided", why
			return true
		}
	}
	if control != nil && control.notHere != "" {
		r.Status, r.Observed, r.Evidence = StatusNotApplicable, "not applicable", control.notHere
		return true
	}
	return false
}

// unobserved fills r when a step of the check has no observation, or
// one its OS cannot make.
func unobserved(e *Env, ch Check, ev *Evidence, r *Result) bool {
	for _, s := range ch.Steps(e) {
		o, ok := ev.Obs[s.ID]
		if !ok {
			r.Status, r.Observed = StatusInconclusive, "no observation"
			r.Evidence = fmt.Sprintf("the probe reported nothing for %s (exit %d)", s.ID, ev.Result.ExitCode)
			return true
		}
		// Only a check missing its Requires gets here: never ok.
		if o.Unsupported() {
			r.Status, r.Observed = StatusInconclusive, "not run"
			r.Evidence = o.Detail + ": the check must require a capability this OS's backends lack"
			return true
		}
	}
	return false
}

// judgeAllowed: what the sandbox must allow succeeded; where it did not
// and the control outside could not either, the host lacks it.
func judgeAllowed(r *Result, succeeded bool, control *controlResult) {
	r.OK = succeeded
	r.Status = map[bool]string{true: StatusOK, false: StatusFail}[succeeded]
	if control != nil && !succeeded && !control.saw {
		r.Status = StatusInconclusive
		r.Evidence += "; the control outside the sandbox could not do it either: the host lacks it, not the sandbox"
	}
}

// judgeBlocked: what the sandbox must block failed, and the control
// outside it did it (else the check proves nothing).
func judgeBlocked(r *Result, succeeded bool, control *controlResult) {
	switch {
	case succeeded:
		r.Status = StatusFail
	case control == nil || !control.saw:
		r.Status = StatusInconclusive
		r.Evidence += "; the control outside the sandbox could not do it either, so this check proves nothing"
	default:
		r.Status, r.OK = StatusOK, true
	}
}

// slowestSteps names the n probe steps that took longest, with their time.
func slowestSteps(evs []*Evidence, n int) []string {
	type timed struct {
		id string
		ms int64
	}
	var all []timed
	for _, ev := range evs {
		if ev != nil {
			for id, o := range ev.Obs {
				all = append(all, timed{id, o.Ms})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ms > all[j].ms })
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, fmt.Sprintf("%s %dms", all[i].id, all[i].ms))
	}
	return out
}
