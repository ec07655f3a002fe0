package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// doctorReport prints one line per finding: ok, warn (information the
// operator should act on, not a failure), FAIL, or no (a backend that is
// not configured cannot run here).
type doctorReport struct {
	w   io.Writer
	bad int
}

func (r *doctorReport) line(mark, what, detail string) {
	fmt.Fprintf(r.w, "%-5s %-28s %s\n", mark, what, detail)
}
func (r *doctorReport) ok(what, detail string)   { r.line("ok", what, detail) }
func (r *doctorReport) warn(what, detail string) { r.line("warn", what, detail) }
func (r *doctorReport) info(what, detail string) { r.line("no", what, detail) }
func (r *doctorReport) note(what, detail string) { r.line("info", what, detail) }
func (r *doctorReport) fail(what, detail string) { r.bad++; r.line("FAIL", what, detail) }

func newDoctorCmd() *cobra.Command {
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "doctor [--config F]",
		Short: "Say whether each backend can run here, and why not",
		RunE: func(cmd *cobra.Command, args []string) error {
			rep := &doctorReport{w: os.Stdout}
			reg := builtin.Registry()
			configOK := doctorConfig(rep, pf.config, reg.Names())
			// Each role's policy, checked against its backend exactly as run would.
			policies := map[string][]*policy.Policy{}
			warned := map[string]bool{}
			for _, role := range profiles.Roles() {
				if !configOK {
					break // each role would fail with the config's own line
				}
				pf.role = role
				p, err := pf.compile()
				if err != nil {
					rep.fail(string(role)+" policy", err.Error())
					continue
				}
				rep.ok(string(role)+" policy", p.Hash()+" (backend "+p.Backend+")")
				policies[p.Backend] = append(policies[p.Backend], p)
				for _, w := range p.Warnings {
					if !warned[w] {
						warned[w] = true
						rep.warn("warning", w)
					}
				}
			}
			exe, err := sandbox.SelfExe()
			if err != nil {
				rep.fail("static binary", err.Error())
			} else {
				rep.ok("static binary", exe)
				doctorInside(rep, exe)
			}
			for _, name := range reg.Names() {
				doctorBackend(cmd, rep, reg, name, exe, policies[name], configOK)
			}
			for name, ps := range policies {
				if !slices.Contains(reg.Names(), name) {
					rep.fail(name, fmt.Sprintf("backend not available in this build (%s roles configured for it); choose one of %v", ps[0].Role, reg.Names()))
				}
			}
			if rep.bad > 0 {
				return &exitError{code: exitcode.Failed}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&pf.config, "config", "", "triage.toml to read")
	addBackendsHelp(cmd, builtin.Registry())
	return cmd
}

// doctorInside says which binary runs inside sandboxes, and why not the
// small one when it is not.
func doctorInside(rep *doctorReport, self string) {
	c, err := chooseInside(self)
	switch {
	case err != nil:
		rep.fail("inside binary", err.Error())
	case c.Separate:
		rep.ok("inside binary", c.Path)
	default:
		rep.note("inside binary", self+" (the CLI's own, slower to start): "+c.Why)
	}
}

// doctorBackend checks one registered backend: for the configured one,
// that it is ready for each role's policy (the configured image included);
// for the others, only whether they could run here.
// doctorConfig names the config doctor read (or says there is none) and
// reports whether it loaded; a broken one fails with its file:line.
func doctorConfig(rep *doctorReport, flag string, backendNames []string) bool {
	host, err := policy.CurrentHost()
	if err != nil {
		rep.fail("config", err.Error())
		return false
	}
	cfg, err := sandbox.LoadConfig(flag, host.Cwd, backendNames)
	switch {
	case err != nil:
		rep.fail("config", "broken: "+err.Error())
		return false
	case cfg.Path == "":
		rep.note("config", "no triage.toml from "+host.Cwd+" up: built-in defaults, workspace root "+cfg.Root)
	default:
		rep.ok("config", cfg.Path)
	}
	return true
}

func doctorBackend(cmd *cobra.Command, rep *doctorReport, reg *backends.Registry, name, exe string, ps []*policy.Policy, configOK bool) {
	if detail, ok := elsewhereDetail(reg, name, exe); ok {
		// A policy for it would have handed doctor over (handOff) before
		// this point; here it is only information.
		rep.info(name, detail)
		return
	}
	b, err := reg.New(name, backends.Env{SelfExe: exe})
	if err != nil {
		if len(ps) > 0 {
			rep.fail(name, err.Error())
		} else {
			rep.info(name, err.Error())
		}
		return
	}
	var layers []backends.Layer
	if pl, ok := b.(backends.PolicyLayerReporter); ok && len(ps) > 0 {
		layers = pl.LayersFor(ps[0])
	} else if lr, ok := b.(backends.LayerReporter); ok {
		layers = lr.Layers()
	}
	for _, l := range layers {
		detail := l.Detail
		if !l.Available && l.Cost != "" {
			detail += "; without it " + l.Cost
		}
		if l.Available {
			rep.note(name+": "+l.Name, detail)
		} else {
			rep.info(name+": "+l.Name, detail)
		}
	}
	doctorEngine(cmd, rep, b, name, len(ps) > 0)
	if len(ps) == 0 {
		switch err := b.Available(cmd.Context()); {
		case err != nil:
			rep.info(name, err.Error())
		case !configOK:
			// Which backend the config asks for is unknown until it loads.
			rep.note(name, "can run here (not checked against the config: it is broken, see above)")
		default:
			rep.note(name, "can run here (not configured; --backend "+name+" to use it)")
		}
		return
	}
	for _, p := range ps {
		what := name + " for " + string(p.Role)
		if err := b.Ready(cmd.Context(), p); err != nil {
			rep.fail(what, err.Error())
			continue
		}
		weakened, err := policy.Enforce(p, name, b.Capabilities())
		switch {
		case err != nil:
			rep.fail(what, err.Error())
		case len(weakened) > 0:
			rep.warn(what, fmt.Sprintf("ready, in an accepted weaker mode: %v", weakened))
		default:
			rep.ok(what, "ready ("+describeBase(p)+")")
		}
		if err == nil && p.Python != "" {
			doctorPython(cmd, rep, b, p)
		}
	}
}

// doctorEngine names the engine a backend talks to (Docker or Podman, its
// version, where), when it talks to one.
func doctorEngine(cmd *cobra.Command, rep *doctorReport, b backends.Backend, name string, configured bool) {
	er, ok := b.(backends.EngineReporter)
	if !ok {
		return
	}
	what := name + ": engine"
	switch info, err := er.EngineInfo(cmd.Context()); {
	case err == nil:
		rep.note(what, info)
	case configured:
		rep.fail(what, err.Error())
	default:
		rep.info(what, err.Error())
	}
}

// doctorPython runs the configured interpreter inside the sandbox, as a
// reproducer would, and reports what fails with the fix.
func doctorPython(cmd *cobra.Command, rep *doctorReport, b backends.Backend, p *policy.Policy) {
	what := "python for " + string(p.Role)
	var stdout, stderr bytes.Buffer
	res, err := sandbox.Run(cmd.Context(), b, sandbox.Request{
		Policy: p, Timeout: time.Minute, NoAudit: true, NoGate: true,
		Command: backends.Command{Argv: []string{p.Python, "-c", "import sys; print(sys.version.split()[0], sys.prefix)"}},
		Streams: backends.Streams{Stdout: &stdout, Stderr: &stderr},
	})
	switch {
	case err != nil:
		rep.fail(what, err.Error())
	case res.ExitCode != 0:
		rep.fail(what, fmt.Sprintf("%s exits %d in the sandbox: %s; check [project] python and that its environment and base interpreter are readable",
			p.Python, res.ExitCode, strings.TrimSpace(lastLine(stderr.String()))))
	default:
		rep.ok(what, p.Python+" runs: "+strings.TrimSpace(stdout.String()))
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func describeBase(p *policy.Policy) string {
	if p.Base.Kind == policy.BaseImage {
		return "image " + p.Base.Image
	}
	return "host roots"
}
