package conformance_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/backends/kubernetes"
	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/backends/oci"
	"github.com/triage-sandbox/triage-sandbox/backends/seatbelt"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// limit is one rendered rlimit, soft and hard.
type limit struct{ soft, hard uint64 }

// rlimitRendering is one backend's rendering of a policy's rlimits, by
// Linux name without RLIMIT_ ("FSIZE").
type rlimitRendering struct {
	name string
	// backend is the backend the policy is built for (its capabilities
	// decide the readable base: an image or host roots).
	backend string
	caps    []policy.Capability
	render  func(t *testing.T, p *policy.Policy, cmd backends.Command) (map[string]limit, error)
}

func rlimitRenderings() []rlimitRendering {
	return []rlimitRendering{
		{"docker container", "docker", docker.Capabilities(), func(t *testing.T, p *policy.Policy, _ backends.Command) (map[string]limit, error) {
			req, err := docker.Render(p, selfExe, docker.RunInfo{Name: "conformance"})
			if err != nil {
				return nil, err
			}
			out := map[string]limit{}
			for _, u := range req.HostConfig.Ulimits {
				out[strings.ToUpper(u.Name)] = limit{uint64(u.Soft), uint64(u.Hard)}
			}
			return out, nil
		}},
		{"oci process", "oci", oci.Capabilities(), func(t *testing.T, p *policy.Policy, cmd backends.Command) (map[string]limit, error) {
			s, err := oci.Render(p, cmd, selfExe)
			if err != nil {
				return nil, err
			}
			return ociRlimits(s.Process.Rlimits), nil
		}},
		// runc exec takes the exec process's own rlimits, not the
		// container's: the command each Exec runs.
		{"oci exec process", "oci", oci.Capabilities(), func(t *testing.T, p *policy.Policy, cmd backends.Command) (map[string]limit, error) {
			s, err := oci.Render(p, cmd, selfExe)
			if err != nil {
				return nil, err
			}
			x, err := oci.ExecProcess(s)
			if err != nil {
				return nil, err
			}
			return ociRlimits(x.Rlimits), nil
		}},
		{"local plan", "local", local.Capabilities(), func(t *testing.T, p *policy.Policy, _ backends.Command) (map[string]limit, error) {
			pl, err := local.Plan(p, selfExe)
			if err != nil {
				return nil, err
			}
			out := map[string]limit{}
			for _, r := range pl.Rlimits {
				out[r.Name] = limit{r.Soft, r.Hard}
			}
			return out, nil
		}},
		{"kubernetes exec (runc)", "kubernetes", kubernetes.Capabilities(), kubeExec(runtimes.Of(""))},
		{"kubernetes exec (gVisor)", "kubernetes", kubernetes.Capabilities(), kubeExec(runtimes.Of("runsc"))},
		{"seatbelt supervisor", "seatbelt", seatbelt.Capabilities(), func(t *testing.T, p *policy.Policy, cmd backends.Command) (map[string]limit, error) {
			b, err := seatbelt.NewWithOptions(backends.Env{SelfExe: selfExe}, seatbelt.Options{StateDir: t.TempDir()})
			if err != nil {
				return nil, err
			}
			art, err := b.Render(p, cmd)
			if err != nil {
				return nil, err
			}
			return specRlimits(art.(*seatbelt.Artifact).Rlimits), nil
		}},
	}
}

// kubeExec reads the rlimits of the supervisor's spec in a pod's exec
// under runtime rt: a pod's spec has none, the supervisor sets them.
func kubeExec(rt runtimes.Traits) func(*testing.T, *policy.Policy, backends.Command) (map[string]limit, error) {
	return func(t *testing.T, p *policy.Policy, cmd backends.Command) (map[string]limit, error) {
		e, err := kubernetes.RenderExec(p, cmd, rt)
		if err != nil {
			return nil, err
		}
		spec, err := protocol.DecodeExec(e.Command[2:])
		if err != nil {
			return nil, err
		}
		return specRlimits(spec.Rlimits), nil
	}
}

func ociRlimits(rs []specs.POSIXRlimit) map[string]limit {
	out := map[string]limit{}
	for _, r := range rs {
		out[strings.TrimPrefix(r.Type, "RLIMIT_")] = limit{r.Soft, r.Hard}
	}
	return out
}

func specRlimits(rs []protocol.Rlimit) map[string]limit {
	out := map[string]limit{}
	for _, r := range rs {
		out[r.Name] = limit{r.Value, r.Value}
	}
	return out
}

// TestRlimitsRendered: every backend's rendering carries each of the
// policy's rlimits (policy.Policy.Rlimits), soft and hard at the policy's
// value: a backend that drops one (as kubernetes and seatbelt did) or
// renders another number fails here, for both roles and a configured
// file size.
func TestRlimitsRendered(t *testing.T) {
	cases := []struct {
		name string
		role profiles.Role
		toml string
	}{
		{"agent defaults", profiles.RoleAgent, ""},
		{"reproducer defaults", profiles.RoleReproducer, ""},
		{"reproducer file size", profiles.RoleReproducer, "[sandbox.reproducer]\nfile_size = \"8m\"\n"},
	}
	cmd := backends.Command{Argv: []string{"python3", "repro.py"}, Timeout: 42 * time.Second}
	for _, c := range cases {
		for _, r := range rlimitRenderings() {
			t.Run(c.name+"/"+r.name, func(t *testing.T) {
				p := buildFor(t, r.backend, r.caps, c.role, c.toml)
				want := p.Rlimits()
				if len(want) < 3 {
					t.Fatalf("the policy's rlimits %+v: want open files, file size and core", want)
				}
				got, err := r.render(t, p, cmd)
				if err != nil {
					t.Fatalf("rendering: %v", err)
				}
				for _, w := range want {
					v := uint64(w.Value)
					if g, ok := got[w.Name]; !ok {
						t.Errorf("RLIMIT_%s (policy %d) is not rendered; rendered: %v", w.Name, w.Value, got)
					} else if g != (limit{v, v}) {
						t.Errorf("RLIMIT_%s rendered soft %d hard %d, policy %d", w.Name, g.soft, g.hard, w.Value)
					}
				}
			})
		}
	}
}

// buildFor builds role's policy for backend (with its capabilities) in a
// fresh workspace whose triage.toml is toml ("" for the defaults) and
// accepts every weaker mode.
func buildFor(t *testing.T, backend string, caps []policy.Capability, role profiles.Role, toml string) *policy.Policy {
	t.Helper()
	base := t.TempDir()
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "work")
	for _, d := range []string{home, ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// What kubernetes and seatbelt lack is accepted: the rlimits are
	// what is checked here.
	toml = "[sandbox]\naccept_weaker = [\"own_loopback\", \"pid_namespace\", \"memory_limit\", \"pids_limit\", \"cpu_limit\", \"bounded_writes\"]\n" + toml
	path := filepath.Join(ws, config.FileName)
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	host := policy.Host{Home: home, UID: 1000, GID: 1000, OS: "linux", Cwd: ws,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8"}}
	p, err := policy.Build(cfg, role, host, policy.Options{Backend: backend, Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
