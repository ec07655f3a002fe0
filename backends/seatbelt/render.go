package seatbelt

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// SandboxExec is pinned: a sandbox-exec found through PATH could be anything.
const SandboxExec = "/usr/bin/sandbox-exec"

// ProfilePlaceholder stands for the profile file in a rendering that is not
// run (`render`): the runner writes the profile to a 0600 file per command.
const ProfilePlaceholder = "<profile.sb>"

//go:embed base.sbpl
var baseSBPL string

// Input is what a rendering needs besides the policy and the command.
type Input struct {
	// Canon gives the spelling the kernel matches (/tmp -> /private/tmp).
	Canon Canonicalizer
	// RunID names this run in every denial logged: tsbx:RUNID.
	RunID string
	// RunDir is the per-run directory: HOME is RunDir/home, TMPDIR RunDir/tmp.
	RunDir string
	// Self is the triage-sandbox binary, readable inside so the selftest's
	// probe runs; "" for none.
	Self string
	// HostPorts are the TCP and UDP ports this host listens on when the
	// command starts: connecting to them is denied.
	HostPorts []int
	// OptIns are documented service opt-ins (see OptIns).
	OptIns []string
	// ProfilePath is where the profile is written; "" shows a placeholder.
	ProfilePath string
}

// Artifact is the rendering: the profile, its parameters and the argv that
// runs the command under it.
type Artifact struct {
	SandboxExec string            `json:"sandbox_exec"`
	Profile     string            `json:"profile"`
	Params      map[string]string `json:"params"`
	Argv        []string          `json:"argv"`
	// Rlimits are the policy's rlimits, which the supervisor sets on itself
	// before it starts Argv (a profile has none). No RLIMIT_NPROC: on
	// macOS it counts every process of the user.
	Rlimits []protocol.Rlimit `json:"rlimits"`
	// Scratch is where HOME and TMPDIR are, canonical.
	Scratch policy.ScratchPaths `json:"-"`
	// Env is the supervisor's environment, which the command inherits
	// (the runner starts it with this).
	Env []string `json:"-"`
	// rendered is what the profile's rules allow, recorded by the phase
	// that wrote each rule (Summary); spelled maps the policy's spelling
	// of a path to the canonical one the rules name.
	rendered backends.Rendered
	spelled  map[string]string
}

// JSON implements backends.Artifact.
func (a *Artifact) JSON() ([]byte, error) { return json.MarshalIndent(a, "", "  ") }

var runIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

// Render translates the policy into an SBPL profile for cmd. It is pure:
// the filesystem is consulted only through in.Canon. What Seatbelt cannot
// express is refused with the reason, never rendered wider.
func Render(p *policy.Policy, cmd backends.Command, in Input) (*Artifact, error) {
	if err := backends.CheckArgv(cmd.Argv); err != nil {
		return nil, err
	}
	if err := check(p, in); err != nil {
		return nil, err
	}
	r := &renderer{p: p, in: in, ps: newParams(),
		prof: &profile{tag: "tsbx:" + in.RunID, base: baseSBPL}}
	steps := []func() error{r.scratch, r.writes, r.reads, r.network, r.services, r.denies}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	profilePath := in.ProfilePath
	if profilePath == "" {
		profilePath = ProfilePlaceholder
	}
	argv := append([]string{SandboxExec, "-f", profilePath}, r.ps.flags()...)
	argv = append(append(argv, "--"), cmd.Argv...)
	return &Artifact{SandboxExec: SandboxExec, Profile: r.prof.text(), Params: r.ps.values, Argv: argv,
		Rlimits: launch.Rlimits(p, 0), Scratch: r.scratchPaths, Env: p.EnvList(r.scratchPaths), rendered: r.rendered, spelled: r.spelled}, nil
}

// check refuses policies and inputs this renderer cannot give.
func check(p *policy.Policy, in Input) error {
	switch {
	case p.AllowAll:
		return errors.New("allow_all has no sandbox to render: it runs unconfined on the host")
	case p.Base.Kind != policy.BaseHost:
		return fmt.Errorf("the seatbelt renderer reads an allow-list of host roots; the policy's root is %q (build it for the seatbelt backend)", p.Base.Kind)
	case p.User.UID == 0:
		return errors.New("refusing to run as uid 0 under Seatbelt")
	case in.Canon == nil:
		return errors.New("seatbelt: no canonicalizer")
	case !runIDPattern().MatchString(in.RunID):
		return fmt.Errorf("seatbelt: run id %q: want 1-64 letters, digits, '.', '_' or '-'", in.RunID)
	case in.RunDir == "":
		return errors.New("seatbelt: no run directory")
	}
	for _, port := range in.HostPorts {
		if port < 1 || port > 65535 {
			return fmt.Errorf("seatbelt: host port %d out of range", port)
		}
	}
	return checkOptIns(in.OptIns)
}

// renderer carries one rendering's state through the phase builders.
type renderer struct {
	p            *policy.Policy
	in           Input
	ps           *params
	prof         *profile
	scratchPaths policy.ScratchPaths
	runParam     string
	// rendered records what the rules written so far allow, at canonical
	// paths; spelled maps the policy's spelling of each path to it.
	rendered backends.Rendered
	spelled  map[string]string
}

// canon canonicalises one path, naming what it is in the error.
func (r *renderer) canon(what, p string) (string, error) {
	c, err := r.in.Canon.Canonical(p)
	if err != nil {
		return "", fmt.Errorf("the seatbelt renderer cannot use %s: %w", what, err)
	}
	if c != p {
		if r.spelled == nil {
			r.spelled = map[string]string{}
		}
		r.spelled[p] = c
	}
	return c, nil
}
