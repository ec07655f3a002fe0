package conformance_test

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/kubernetes"
	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/backends/oci"
	"github.com/triage-sandbox/triage-sandbox/backends/seatbelt"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// coverageBackend is one backend's renderer, as `render` runs it.
type coverageBackend struct {
	name   string
	caps   []policy.Capability
	render func(t *testing.T, p *policy.Policy, cmd backends.Command) (backends.Artifact, error)
}

func coverageBackends(t *testing.T) []coverageBackend {
	env := backends.Env{SelfExe: selfExe}
	viaBackend := func(newB func() (backends.Backend, error)) func(*testing.T, *policy.Policy, backends.Command) (backends.Artifact, error) {
		return func(t *testing.T, p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
			b, err := newB()
			if err != nil {
				t.Fatal(err)
			}
			return b.Render(p, cmd)
		}
	}
	return []coverageBackend{
		// docker's Backend.Render asks nothing of the daemon but its
		// constructor dials it: the same two renderers it calls.
		{"docker", docker.Capabilities(), func(t *testing.T, p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
			c, err := docker.Render(p, selfExe, docker.RunInfo{Name: "conformance"})
			if err != nil {
				return nil, err
			}
			x, err := docker.RenderExec(p, cmd)
			if err != nil {
				return nil, err
			}
			return &docker.Artifact{Create: c, Exec: x}, nil
		}},
		{"oci", oci.Capabilities(), func(t *testing.T, p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
			return oci.Render(p, cmd, selfExe)
		}},
		{"local", local.Capabilities(), viaBackend(func() (backends.Backend, error) { return local.New(env) })},
		{"kubernetes", kubernetes.Capabilities(), viaBackend(func() (backends.Backend, error) { return kubernetes.New(env) })},
		{"seatbelt", seatbelt.Capabilities(), viaBackend(func() (backends.Backend, error) {
			return seatbelt.NewWithOptions(env, seatbelt.Options{StateDir: t.TempDir()})
		})},
	}
}

// coverageCheck is one field of the policy and the capability a backend
// that cannot honour it must declare missing ("" for none: every backend
// must honour it). gaps says what of the field the rendering lacks.
type coverageCheck struct {
	field string
	cap   func(p *policy.Policy) policy.Capability
	gaps  func(p *policy.Policy, r backends.Rendered) []string
}

func must(*policy.Policy) policy.Capability { return "" }

func capOf(c policy.Capability) func(*policy.Policy) policy.Capability {
	return func(*policy.Policy) policy.Capability { return c }
}

// coverageChecks are every field of the summary against the policy.
func coverageChecks() []coverageCheck {
	return []coverageCheck{
		{"mounts", must, mountGaps},
		{"staged writes", capOf(profiles.CapBoundedWrites), stagedGaps},
		{"unreadable", must, unreadableGaps},
		{"masks", capOf(profiles.CapMaskUnderMount), func(p *policy.Policy, r backends.Rendered) []string {
			var out []string
			for _, m := range p.Masked {
				if !covered(m, r.Masked) {
					out = append(out, m+" is not masked")
				}
			}
			return out
		}},
		{"env", must, func(p *policy.Policy, r backends.Rendered) []string {
			want := backends.EnvNames(p.EnvList(policy.ScratchPaths{Home: "/h", Tmp: "/t"}))
			if !sameSet(want, r.Env) {
				return []string{fmt.Sprintf("names %q, policy %q", sorted(r.Env), sorted(want))}
			}
			return nil
		}},
		{"network", must, func(p *policy.Policy, r backends.Rendered) []string {
			if r.Network != p.Network.Mode {
				return []string{fmt.Sprintf("rendered %q, policy %q", r.Network, p.Network.Mode)}
			}
			return nil
		}},
		{"own network", func(p *policy.Policy) policy.Capability {
			if p.Network.Mode == policy.NetworkOutbound {
				return profiles.CapOutboundNAT
			}
			return profiles.CapOwnLoopback
		}, func(p *policy.Policy, r backends.Rendered) []string {
			if p.Network.Mode != policy.NetworkHost && !r.OwnNetwork {
				return []string{"the host's network namespace"}
			}
			return nil
		}},
		{"memory", capOf(profiles.CapMemoryLimit), limitGap(func(p *policy.Policy, r backends.Rendered) (float64, float64) {
			return float64(p.Limits.Memory), float64(r.Memory)
		})},
		{"pids", capOf(profiles.CapPidsLimit), limitGap(func(p *policy.Policy, r backends.Rendered) (float64, float64) {
			return float64(p.Limits.Pids), float64(r.Pids)
		})},
		{"cpus", capOf(profiles.CapCPULimit), limitGap(func(p *policy.Policy, r backends.Rendered) (float64, float64) {
			return p.Limits.CPUs, r.CPUs
		})},
		{"rlimits", must, rlimitGaps},
		{"identity", capOf(profiles.CapUIDSwitch), func(p *policy.Policy, r backends.Rendered) []string {
			if p.User.Switch && (!r.Switched || r.UID != p.User.UID || r.GID != p.User.GID) {
				return []string{fmt.Sprintf("rendered %d:%d (switched %v), policy %d:%d", r.UID, r.GID, r.Switched, p.User.UID, p.User.GID)}
			}
			return nil
		}},
	}
}

// mountGaps: every mount of the policy is visible at its path, writable
// if the policy's is and not writable if it is read-only. Of the rendered
// mounts that cover a path, the deepest decides (a bind over a bind).
func mountGaps(p *policy.Policy, r backends.Rendered) []string {
	var out []string
	for _, m := range p.Mounts {
		got, ok := deepest(m.Path, r.Mounts)
		switch {
		case !ok:
			out = append(out, m.Path+" is not visible")
		case m.ReadOnly && got.Writable:
			out = append(out, m.Path+" is writable, the policy's is read-only")
		case !m.ReadOnly && !got.Writable:
			out = append(out, m.Path+" is read-only, the policy's is writable")
		}
	}
	return out
}

// stagedGaps: a policy that stages its writable paths has each written to
// a bounded copy, not the host's.
func stagedGaps(p *policy.Policy, r backends.Rendered) []string {
	if !p.Staged() {
		return nil
	}
	var out []string
	for _, m := range p.Mounts {
		if got, ok := deepest(m.Path, r.Mounts); !m.ReadOnly && ok && !got.Staged {
			out = append(out, m.Path+" is written to the host")
		}
	}
	return out
}

// unreadableGaps: no credential path is visible unless masked.
func unreadableGaps(p *policy.Policy, r backends.Rendered) []string {
	var out []string
	for _, u := range p.Unreadable {
		if _, ok := deepest(u, r.Mounts); ok && !covered(u, r.Masked) {
			out = append(out, u+" is visible")
		}
	}
	return out
}

func rlimitGaps(p *policy.Policy, r backends.Rendered) []string {
	var out []string
	for _, w := range p.Rlimits() {
		i := slices.IndexFunc(r.Rlimits, func(g backends.RenderedRlimit) bool { return g.Name == w.Name })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("RLIMIT_%s (policy %d) is not rendered", w.Name, w.Value))
		case r.Rlimits[i].Soft != uint64(w.Value) || r.Rlimits[i].Hard != uint64(w.Value):
			out = append(out, fmt.Sprintf("RLIMIT_%s soft %d hard %d, policy %d", w.Name, r.Rlimits[i].Soft, r.Rlimits[i].Hard, w.Value))
		}
	}
	return out
}

// limitGap: a limit the policy sets is rendered at its value (within a
// thousandth: CPUs become a quota).
func limitGap(get func(p *policy.Policy, r backends.Rendered) (want, got float64)) func(*policy.Policy, backends.Rendered) []string {
	return func(p *policy.Policy, r backends.Rendered) []string {
		want, got := get(p, r)
		if want > 0 && math.Abs(want-got) > want/1000 {
			return []string{fmt.Sprintf("rendered %g, policy %g", got, want)}
		}
		return nil
	}
}

// deepest is the rendered mount that decides what path is: the deepest
// at or above it (a tree) among those that cover it.
func deepest(path string, ms []backends.RenderedMount) (backends.RenderedMount, bool) {
	path = filepath.Clean(path)
	best, depth, found := backends.RenderedMount{}, -1, false
	for _, m := range ms {
		mp := filepath.Clean(m.Path)
		if mp != path && !(m.Tree && (mp == "/" || strings.HasPrefix(path, mp+"/"))) {
			continue
		}
		d := strings.Count(mp, "/")
		switch {
		case d > depth:
			best, depth, found = m, d, true
		case d == depth && m.Writable:
			// Two rules at one path: either one's writes count.
			best = m
		}
	}
	return best, found
}

// covered: path is one of dirs or lies below one.
func covered(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// coverageCases are the policies every backend's rendering is checked
// against: both roles, each network mode, masks, limits, identity,
// rlimits.
func coverageCases() []policyCase {
	out := cases()
	out = append(out, policyCase{name: "reproducer file size", role: profiles.RoleReproducer,
		toml: "[sandbox.reproducer]\nfile_size = \"8m\"\n"})
	return out
}

// acceptAll accepts every weaker mode, so each backend builds every case
// and the test sees what it renders and what Enforce reports.
const acceptAll = "accept_weaker = [\"own_loopback\", \"outbound_nat\", \"pid_namespace\", \"memory_limit\", \"pids_limit\", \"cpu_limit\", \"uid_switch\", \"mask_under_mount\", \"bounded_writes\"]\n"

// TestRenderedCoversPolicy: every backend's summary of its rendering
// (backends.Rendered, read from the artifact) is compared with the policy
// field by field. A field the rendering does not honour must be a
// capability the backend does not declare, which policy.Enforce then
// reports as a weaker mode the config accepted (and refuses without the
// acceptance); a field neither honoured nor declared fails here. A policy
// a backend refuses to render must be one Enforce refuses too.
func TestRenderedCoversPolicy(t *testing.T) {
	cmd := backends.Command{Argv: []string{"python3", "repro.py"}, Timeout: 42 * time.Second}
	for _, b := range coverageBackends(t) {
		for _, c := range coverageCases() {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				p, err := buildCase(t, c, b.name, b.caps)
				if err != nil {
					t.Logf("refused at build (not a rendering to compare): %v", err)
					return
				}
				weakened, err := policy.Enforce(p, b.name, b.caps)
				if err != nil {
					t.Fatalf("Enforce with every weaker mode accepted: %v", err)
				}
				art, err := b.render(t, p, cmd)
				if err != nil {
					strict := *p
					strict.Accepted = nil
					if _, eerr := policy.Enforce(&strict, b.name, b.caps); eerr == nil {
						t.Fatalf("rendering refused (%v) a policy Enforce accepts", err)
					}
					t.Logf("refused at render, as Enforce refuses it: %v", err)
					return
				}
				sum, err := art.Summary()
				if err != nil {
					t.Fatalf("summary: %v", err)
				}
				for _, ck := range coverageChecks() {
					gaps := ck.gaps(p, sum)
					if len(gaps) == 0 {
						continue
					}
					need := ck.cap(p)
					switch {
					case need == "":
						t.Errorf("%s: not honoured and no capability can excuse it: %s", ck.field, strings.Join(gaps, "; "))
					case slices.Contains(b.caps, need) && profiles.ProvenAtStart(b.name, need) && slices.Contains(weakened, need):
						// Proven at start, accepted: the proof is skipped,
						// which Enforce reports as weakened.
						t.Logf("%s: proven at start, accepted, reported (%s): %s", ck.field, need, strings.Join(gaps, "; "))
					case slices.Contains(b.caps, need):
						t.Errorf("%s: the backend declares %s but its rendering does not honour it: %s", ck.field, need, strings.Join(gaps, "; "))
					case !slices.Contains(weakened, need):
						t.Errorf("%s: not honoured (%s) and Enforce does not report %s", ck.field, strings.Join(gaps, "; "), need)
					default:
						t.Logf("%s: not honoured, declared and reported (%s): %s", ck.field, need, strings.Join(gaps, "; "))
					}
				}
			})
		}
	}
}

// TestCoverageSpansRegistry: every backend the binaries register is one
// TestRenderedCoversPolicy renders, so a new backend is compared with the
// policy from its first day.
func TestCoverageSpansRegistry(t *testing.T) {
	var covered []string
	for _, b := range coverageBackends(t) {
		covered = append(covered, b.name)
	}
	reg := builtin.Registry().Names()
	if !sameSet(reg, covered) {
		t.Errorf("registered backends %q, covered %q: add the new one to coverageBackends", sorted(reg), sorted(covered))
	}
}

// buildCase builds c's policy for backend with its capabilities,
// accepting every weaker mode, in the case's layout.
func buildCase(t *testing.T, c policyCase, backend string, caps []policy.Capability) (*policy.Policy, error) {
	t.Helper()
	toml := c.toml
	if strings.Contains(toml, "[sandbox]\n") {
		toml = strings.Replace(toml, "[sandbox]\n", "[sandbox]\n"+acceptAll, 1)
	} else {
		toml = "[sandbox]\n" + acceptAll + toml
	}
	c.toml = toml
	p, _, err := tryBuild(t, c, policy.Options{Backend: backend, Capabilities: caps})
	return p, err
}

// TestCoverageChecksFail: each check of TestRenderedCoversPolicy finds the
// gap when a rendering drops or widens what it checks (a check that
// cannot fail checks nothing). The docker rendering of a policy with
// every field set, then one field taken out of its summary at a time.
func TestCoverageChecksFail(t *testing.T) {
	p, err := buildCase(t, policyCase{role: profiles.RoleReproducer, layout: homeIsWorkspace, toml: "[sandbox]\nuser = \"2000:2001\"\nmemory = \"1g\"\npids = 300\ncpus = 3\n"},
		"docker", docker.Capabilities())
	if err != nil {
		t.Fatal(err)
	}
	b := coverageBackends(t)[0]
	art, err := b.render(t, p, backends.Command{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	base, err := art.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Masked) == 0 || !p.Staged() || !p.User.Switch {
		t.Fatalf("the policy must mask, stage and switch identity: masked %q, staged %v, user %+v", p.Masked, p.Staged(), p.User)
	}
	firstRO := slices.IndexFunc(base.Mounts, func(m backends.RenderedMount) bool { return !m.Writable })
	firstStaged := slices.IndexFunc(base.Mounts, func(m backends.RenderedMount) bool { return m.Staged })
	for _, c := range []struct {
		field string
		drop  func(r *backends.Rendered)
	}{
		{"mounts", func(r *backends.Rendered) { r.Mounts = slices.Delete(r.Mounts, firstRO, firstRO+1) }},
		{"mounts", func(r *backends.Rendered) { r.Mounts[firstRO].Writable = true }},
		{"staged writes", func(r *backends.Rendered) { r.Mounts[firstStaged].Staged = false }},
		{"unreadable", func(r *backends.Rendered) {
			r.Masked = nil
			r.Mounts = append(r.Mounts, backends.RenderedMount{Path: filepath.Dir(p.Unreadable[0]), Tree: true})
		}},
		{"masks", func(r *backends.Rendered) {
			r.Masked = slices.DeleteFunc(r.Masked, func(m string) bool { return m == p.Masked[0] })
		}},
		{"env", func(r *backends.Rendered) { r.Env = r.Env[1:] }},
		{"env", func(r *backends.Rendered) { r.Env = append(r.Env, "AWS_SECRET_ACCESS_KEY") }},
		{"network", func(r *backends.Rendered) { r.Network = policy.NetworkOutbound }},
		{"own network", func(r *backends.Rendered) { r.OwnNetwork = false }},
		{"memory", func(r *backends.Rendered) { r.Memory = 0 }},
		{"pids", func(r *backends.Rendered) { r.Pids = 0 }},
		{"cpus", func(r *backends.Rendered) { r.CPUs = 0.5 }},
		{"rlimits", func(r *backends.Rendered) { r.Rlimits = r.Rlimits[1:] }},
		{"rlimits", func(r *backends.Rendered) { r.Rlimits[0].Hard++ }},
		{"identity", func(r *backends.Rendered) { r.UID = 0 }},
	} {
		t.Run(c.field, func(t *testing.T) {
			r := base
			r.Mounts, r.Env, r.Masked, r.Rlimits = slices.Clone(base.Mounts), slices.Clone(base.Env), slices.Clone(base.Masked), slices.Clone(base.Rlimits)
			c.drop(&r)
			for _, ck := range coverageChecks() {
				before, after := ck.gaps(p, base), ck.gaps(p, r)
				switch {
				case len(before) != 0:
					t.Fatalf("%s: the rendering as it is has gaps: %q", ck.field, before)
				case ck.field == c.field && len(after) == 0:
					t.Errorf("%s: no gap found once dropped", ck.field)
				case ck.field == c.field:
					t.Logf("%s: %q", ck.field, after)
				}
			}
		})
	}
}
