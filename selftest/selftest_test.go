package selftest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/mount"

	"github.com/triage-sandbox/triage-sandbox/backends"

	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/selftest"
)

func newBackend(t *testing.T) *docker.Backend {
	t.Helper()
	testenv.RequireDocker(t)
	b, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	return b.(*docker.Backend)
}

func runSelftest(t *testing.T, b *docker.Backend, roles []profiles.Role, mutate func(*policy.Policy), afterPlant func(*selftest.Canaries)) *selftest.Report {
	t.Helper()
	return selftest.Run(context.Background(), selftest.Options{
		Config: config.Default(t.TempDir()), Roles: roles, Backend: b, SelfHost: testenv.Binary(t),
		Mutate: mutate, AfterPlant: afterPlant,
	})
}

func statuses(r *selftest.Report) map[string]string {
	out := map[string]string{}
	for _, rr := range r.Roles {
		for _, res := range rr.Results {
			out[res.ID] = res.Status
		}
	}
	return out
}

// TestSelftestPassesBothRoles is the gate itself on the real daemon.
func TestSelftestPassesBothRoles(t *testing.T) {
	b := newBackend(t)
	rep := runSelftest(t, b, profiles.Roles(), nil, nil)
	var sb strings.Builder
	selftest.WriteHuman(&sb, rep)
	if !rep.Passed() {
		t.Fatalf("selftest failed:\n%s", sb.String())
	}
	for _, rr := range rep.Roles {
		if len(rr.Results) < 30 {
			t.Errorf("%s: only %d checks", rr.Role, len(rr.Results))
		}
	}
	for _, want := range []string{"read SSH keys", "read the GitHub CLI token", "see API keys in the environment",
		"reach the internet", "write to the home directory", "modify the project checkout", "write a reproducer", "run Python"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("the seed check %q is missing", want)
		}
	}
}

// TestWeakenedPoliciesFail proves the gate can fail: each weakening makes
// the named checks FAIL.
func TestWeakenedPoliciesFail(t *testing.T) {
	b := newBackend(t)
	tests := []struct {
		name       string
		mutate     func(*policy.Policy)
		adjust     func(*docker.CreateRequest)
		afterPlant func(*selftest.Canaries)
		want       map[string]string
	}{
		{name: "network on", mutate: func(p *policy.Policy) { p.Network.Mode = policy.NetworkOutbound },
			want: map[string]string{"NET-01": "FAIL", "NET-11": "FAIL", "FS-01": "ok"}},
		{name: "checkout writable", mutate: func(p *policy.Policy) {
			for i := range p.Mounts {
				if p.Mounts[i].Why == "project checkout" {
					p.Mounts[i].ReadOnly = false
				}
			}
		}, want: map[string]string{"WR-03": "FAIL", "WR-08": "FAIL", "WR-01": "ok"}},
		{name: "credential dir mounted", afterPlant: func(c *selftest.Canaries) {
			// As when the sandbox runs as the caller: their own keys are
			// readable to them, so only the mount keeps them out.
			c.WorldReadable = true
		}, mutate: func(p *policy.Policy) {
			for _, u := range p.Unreadable {
				if strings.HasSuffix(u, "/.ssh") {
					p.Mounts = append(p.Mounts, policy.Mount{Path: u, ReadOnly: true, Kind: "dir", Why: "weakened"})
				}
			}
		}, want: map[string]string{"FS-01": "FAIL", "FS-02": "ok"}},
		{name: "env filtering off", mutate: func(p *policy.Policy) {
			for _, kv := range os.Environ() {
				k, v, _ := strings.Cut(kv, "=")
				p.Env = append(p.Env, policy.EnvVar{Name: k, Value: v})
			}
			p.Env = append(p.Env, policy.EnvVar{Name: "GITHUB_TOKEN", Value: "placeholder"})
		}, afterPlant: nil, want: map[string]string{"ENV-01": "FAIL"}},
		{name: "capabilities kept", adjust: func(r *docker.CreateRequest) {
			r.HostConfig.CapDrop = nil
			r.HostConfig.CapAdd = []string{"SYS_ADMIN"}
		}, want: map[string]string{"PRIV-02": "FAIL", "PRIV-03": "FAIL"}},
		{name: "host socket under a mount left unmasked", mutate: func(p *policy.Policy) {
			p.Masked = slices.DeleteFunc(p.Masked, func(m string) bool { return strings.HasSuffix(m, "fsmonitor--daemon.ipc") })
		}, want: map[string]string{"IPC-06": "FAIL", "IPC-04": "ok"}},
		{name: "checkout's git credentials left unmasked", mutate: func(p *policy.Policy) {
			p.Masked = slices.DeleteFunc(p.Masked, func(m string) bool { return strings.Contains(m, "/checkout/.git/") })
		}, want: map[string]string{"FS-12": "FAIL", "FS-13": "ok"}},
		{name: "tool prefix configs left unmasked", mutate: func(p *policy.Policy) {
			p.Masked = slices.DeleteFunc(p.Masked, func(m string) bool { return strings.Contains(m, "/toolprefix/") })
		}, want: map[string]string{"FS-13": "FAIL", "FS-12": "ok"}},
		{name: "system directories bound without nosuid", adjust: func(r *docker.CreateRequest) {
			for i, m := range r.HostConfig.Mounts {
				if m.Type == mount.TypeVolume && m.Source == docker.NoSuidVolume(m.Target) {
					r.HostConfig.Mounts[i] = mount.Mount{Type: mount.TypeBind, Source: m.Target, Target: m.Target, ReadOnly: true}
				}
			}
		}, want: map[string]string{"PRIV-05": "FAIL", "PRIV-01": "ok"}},
		{name: "host sockets deep under a mount left unmasked", mutate: func(p *policy.Policy) {
			p.Masked = slices.DeleteFunc(p.Masked, func(m string) bool { return strings.HasSuffix(m, "/daemon.sock") })
		}, want: map[string]string{"IPC-07": "FAIL", "IPC-06": "ok"}},
		{name: "the engine's own seccomp default (AF_VSOCK open)", adjust: func(r *docker.CreateRequest) {
			r.HostConfig.SecurityOpt = slices.DeleteFunc(r.HostConfig.SecurityOpt, func(o string) bool { return strings.HasPrefix(o, "seccomp=") })
		}, want: map[string]string{"NET-13": "FAIL", "PRIV-03": "ok"}},
		// The resource checks' controls run beside the sandbox runs: with
		// the limit gone, the sandbox side must still be caught.
		{name: "no process limit", adjust: func(r *docker.CreateRequest) {
			unlimited := int64(-1)
			r.HostConfig.PidsLimit = &unlimited
		}, want: map[string]string{"RES-01": "FAIL", "RES-02": "ok"}},
		{name: "no memory limit", adjust: func(r *docker.CreateRequest) {
			r.HostConfig.Memory, r.HostConfig.MemorySwap = 0, 0
		}, want: map[string]string{"RES-02": "FAIL", "RES-01": "ok"}},
		{name: "allow_all", mutate: func(p *policy.Policy) { p.AllowAll = true },
			want: map[string]string{"FS-01": "FAIL", "NET-01": "FAIL", "C-01": "FAIL"}},
		{name: "control cannot see the canary", afterPlant: func(c *selftest.Canaries) {
			_ = os.Remove(filepath.Join(c.Home, ".ssh/id_selftest_canary"))
		}, want: map[string]string{"FS-01": "INCONCLUSIVE", "FS-02": "ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.Adjust = tt.adjust
			defer func() { b.Adjust = nil }()
			mutate := tt.mutate
			if tt.name == "env filtering off" {
				// The canary values must be in the sandbox's env: take them
				// from the canaries themselves.
				var canaries *selftest.Canaries
				tt.afterPlant = func(c *selftest.Canaries) { canaries = c }
				mutate = func(p *policy.Policy) {
					for k, v := range canaries.Env {
						p.Env = append(p.Env, policy.EnvVar{Name: k, Value: v})
					}
				}
			}
			rep := runSelftest(t, b, []profiles.Role{profiles.RoleReproducer}, mutate, tt.afterPlant)
			if rep.Passed() {
				t.Fatal("a weakened sandbox passed the gate")
			}
			got := statuses(rep)
			for id, want := range tt.want {
				if got[id] != want {
					var sb strings.Builder
					selftest.WriteHuman(&sb, rep)
					t.Errorf("%s = %s, want %s\n%s", id, got[id], want, sb.String())
				}
			}
		})
	}
}
