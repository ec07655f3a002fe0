package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/seccompprofile"
)

const selfExe = "/usr/local/libexec/triage-sandbox-static"

// buildPolicy builds role's policy for a workspace that is also the
// caller's home, with ~/.ssh present so the policy must mask it. toml, when
// not empty, is written as the workspace's triage.toml.
func buildPolicy(t *testing.T, role profiles.Role, toml string) *policy.Policy {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A configured workspace: without a triage.toml missing outputs are
	// not created, and the test wants writable mounts to check.
	path := filepath.Join(root, config.FileName)
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	host := policy.Host{Home: root, UID: 1000, GID: 1000, OS: "linux", Cwd: root,
		Env: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/root", "TMPDIR=/var/tmp", "GITHUB_TOKEN=ghp_secret"}}
	p, err := policy.Build(cfg, role, host, policy.Options{Backend: "oci"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func render(t *testing.T, p *policy.Policy, cmd backends.Command) Spec {
	t.Helper()
	s, err := Render(p, cmd, selfExe)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mountAt(s Spec, dest string) (specs.Mount, bool) {
	for _, m := range s.Mounts {
		if m.Destination == dest {
			return m, true
		}
	}
	return specs.Mount{}, false
}

func rlimit(proc *specs.Process, typ string) (specs.POSIXRlimit, bool) {
	for _, r := range proc.Rlimits {
		if r.Type == typ {
			return r, true
		}
	}
	return specs.POSIXRlimit{}, false
}

// checkProcess asserts what the holder and every exec process share: the
// policy's identity, environment and workdir, no capability, no new
// privileges, the rlimits and the OOM score.
func checkProcess(t *testing.T, what string, p *policy.Policy, proc *specs.Process) {
	t.Helper()
	if proc == nil {
		t.Fatalf("%s: no process", what)
	}
	if proc.User.UID == 0 || proc.User.UID != uint32(p.User.UID) || proc.User.GID != uint32(p.User.GID) {
		t.Errorf("%s: user %+v, want the policy's %d:%d (never 0)", what, proc.User, p.User.UID, p.User.GID)
	}
	if want := p.EnvList(ScratchPaths); !slices.Equal(proc.Env, want) {
		t.Errorf("%s: env %q, want %q", what, proc.Env, want)
	}
	if proc.Cwd != p.Workdir {
		t.Errorf("%s: cwd %q, want %q", what, proc.Cwd, p.Workdir)
	}
	if c := proc.Capabilities; c == nil || len(c.Bounding)+len(c.Effective)+len(c.Inheritable)+len(c.Permitted)+len(c.Ambient) != 0 {
		t.Errorf("%s: capabilities %+v, want every set present and empty", what, c)
	}
	if !proc.NoNewPrivileges {
		t.Errorf("%s: NoNewPrivileges is off", what)
	}
	if r, ok := rlimit(proc, "RLIMIT_CORE"); !ok || r.Hard != 0 || r.Soft != 0 {
		t.Errorf("%s: RLIMIT_CORE %+v (set %v), want 0/0", what, r, ok)
	}
	if r, ok := rlimit(proc, "RLIMIT_NOFILE"); !ok || r.Hard != uint64(p.Limits.NoFile) || r.Soft != uint64(p.Limits.NoFile) {
		t.Errorf("%s: RLIMIT_NOFILE %+v (set %v), want %d", what, r, ok, p.Limits.NoFile)
	}
	if proc.OOMScoreAdj == nil || *proc.OOMScoreAdj != p.Limits.OOMScoreAdj || *proc.OOMScoreAdj <= 0 {
		t.Errorf("%s: OOMScoreAdj %v, want %d", what, proc.OOMScoreAdj, p.Limits.OOMScoreAdj)
	}
	if proc.Terminal {
		t.Errorf("%s: a terminal is allocated", what)
	}
	for _, kv := range proc.Env {
		if strings.Contains(kv, "ghp_secret") {
			t.Errorf("%s: env passes the caller's credential: %q", what, kv)
		}
	}
}

func TestRenderRoles(t *testing.T) {
	for _, role := range profiles.Roles() {
		t.Run(string(role), func(t *testing.T) {
			p := buildPolicy(t, role, "")
			cmd := backends.Command{Argv: []string{"python3", "-c", "print(1)"}, Timeout: 90 * time.Second}
			s := render(t, p, cmd)

			if s.Version != specs.Version || s.Hostname != "sandbox" {
				t.Errorf("version %q hostname %q", s.Version, s.Hostname)
			}
			if s.Root == nil || !s.Root.Readonly || s.Root.Path != "rootfs" {
				t.Errorf("root %+v, want rootfs read-only", s.Root)
			}

			// The bundle's process is the holder, not the command.
			checkProcess(t, "holder", p, s.Process)
			args := s.Process.Args
			if len(args) != 3 || args[0] != launch.InitPath || args[1] != string(protocol.EntryHold) {
				t.Fatalf("holder args %q, want %s %s SPEC", args, launch.InitPath, protocol.EntryHold)
			}
			if h, err := protocol.DecodeHold(args[2:]); err != nil || !h.Lifeline {
				t.Errorf("holder spec %s: %+v, %v; want a lifeline", args[2], h, err)
			}
			if slices.Contains(args, "python3") {
				t.Errorf("the holder runs the command: %q", args)
			}

			l := s.Linux
			if l == nil {
				t.Fatal("no linux section")
			}
			var types []specs.LinuxNamespaceType
			for _, ns := range l.Namespaces {
				if ns.Path != "" {
					t.Errorf("namespace %s joins %s: a host namespace", ns.Type, ns.Path)
				}
				types = append(types, ns.Type)
			}
			for _, want := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.NetworkNamespace, specs.IPCNamespace,
				specs.UTSNamespace, specs.MountNamespace, specs.CgroupNamespace} {
				if !slices.Contains(types, want) {
					t.Errorf("namespaces %v lack %s", types, want)
				}
			}

			if len(p.Masked) == 0 || !slices.Contains(p.Masked, filepath.Join(p.WorkspaceRoot, ".ssh")) {
				t.Fatalf("the test policy masks nothing under the workspace: %q", p.Masked)
			}
			for _, m := range append(profiles.KernelMaskedPaths(), p.Masked...) {
				if !slices.Contains(l.MaskedPaths, m) {
					t.Errorf("masked paths lack %s: %q", m, l.MaskedPaths)
				}
			}
			for _, m := range profiles.KernelReadonlyPaths() {
				if !slices.Contains(l.ReadonlyPaths, m) {
					t.Errorf("read-only paths lack %s", m)
				}
			}
			if l.RootfsPropagation != "rprivate" {
				t.Errorf("rootfs propagation %q", l.RootfsPropagation)
			}

			r := l.Resources
			if r == nil || r.Memory == nil || r.Memory.Limit == nil || *r.Memory.Limit != p.Limits.Memory ||
				r.Memory.Swap == nil || *r.Memory.Swap != p.Limits.Memory {
				t.Errorf("memory %+v, want limit = swap = %d", r.Memory, p.Limits.Memory)
			}
			if r.Pids == nil || r.Pids.Limit == nil || *r.Pids.Limit != p.Limits.Pids {
				t.Errorf("pids %+v, want %d", r.Pids, p.Limits.Pids)
			}
			if r.CPU == nil || r.CPU.Quota == nil || r.CPU.Period == nil ||
				float64(*r.CPU.Quota)/float64(*r.CPU.Period) != p.Limits.CPUs {
				t.Errorf("cpu %+v, want quota/period = %v", r.CPU, p.Limits.CPUs)
			}

			checkSeccomp(t, l.Seccomp)
			checkMounts(t, p, s)
			checkExec(t, p, s, cmd)

			// The artifact is the spec itself.
			b, err := s.JSON()
			if err != nil {
				t.Fatal(err)
			}
			var back specs.Spec
			if err := json.Unmarshal(b, &back); err != nil || back.Process == nil || back.Annotations[ExecProcessAnnotation] == "" {
				t.Errorf("JSON does not round-trip: %v", err)
			}
		})
	}
}

// checkSeccomp: Docker's default profile, resolved for no capabilities:
// everything not listed fails with an errno, and the admin syscalls that
// need a capability are not listed.
func checkSeccomp(t *testing.T, sc *specs.LinuxSeccomp) {
	t.Helper()
	if sc == nil {
		t.Fatal("no seccomp filter")
	}
	if sc.DefaultAction != specs.ActErrno {
		t.Errorf("seccomp default action %q, want %q", sc.DefaultAction, specs.ActErrno)
	}
	if len(sc.Syscalls) == 0 {
		t.Fatal("seccomp allows nothing at all")
	}
	allowed := map[string]bool{}
	for _, sys := range sc.Syscalls {
		if sys.Action == specs.ActAllow && len(sys.Args) == 0 {
			for _, n := range sys.Names {
				allowed[n] = true
			}
		}
	}
	for _, n := range []string{"read", "write", "execve", "exit_group"} {
		if !allowed[n] {
			t.Errorf("seccomp does not allow %s", n)
		}
	}
	for _, n := range []string{"mount", "umount2", "reboot", "kexec_load", "init_module", "bpf", "setns", "pivot_root"} {
		if allowed[n] {
			t.Errorf("seccomp allows %s without the capability that guards it", n)
		}
	}
}

func hasOpt(m specs.Mount, opt string) bool { return slices.Contains(m.Options, opt) }

func checkMounts(t *testing.T, p *policy.Policy, s Spec) {
	t.Helper()
	if len(p.Mounts) == 0 || len(p.Writable()) == 0 {
		t.Fatalf("the test policy has mounts %+v", p.Mounts)
	}
	for _, pm := range p.Mounts {
		if !pm.ReadOnly && p.Staged() {
			// A staged copy: a bounded tmpfs (a file lives in its
			// directory's skeleton tmpfs), never a bind of the host path.
			dest := pm.Path
			if pm.Kind == "file" {
				dest = filepath.Dir(pm.Path)
			}
			if m, ok := mountAt(s, dest); !ok || m.Type != "tmpfs" || !hasOpt(m, fmt.Sprintf("nr_inodes=%d", p.Staging.Inodes)) || !hasOpt(m, "nosuid") {
				t.Errorf("staged %s: %+v, want a bounded tmpfs at %s", pm.Path, m, dest)
			}
			continue
		}
		m, ok := mountAt(s, pm.Path)
		if !ok {
			t.Errorf("policy mount %s missing", pm.Path)
			continue
		}
		if m.Type != "bind" || m.Source != pm.Path || !hasOpt(m, "rbind") || !hasOpt(m, "rprivate") {
			t.Errorf("mount %s: %+v, want an rprivate rbind of the same host path", pm.Path, m)
		}
		ro, rw := hasOpt(m, "ro"), hasOpt(m, "rw")
		if pm.ReadOnly && (!ro || rw) || !pm.ReadOnly && (ro || !rw) {
			t.Errorf("mount %s: options %q, want read-only %v", pm.Path, m.Options, pm.ReadOnly)
		}
	}
	init, ok := mountAt(s, launch.InitPath)
	if !ok || init.Source != selfExe || !hasOpt(init, "ro") || hasOpt(init, "rw") {
		t.Errorf("init binary mount %+v (present %v), want %s read-only", init, ok, selfExe)
	}
	// The bundle's hosts file names localhost (the image's /etc/hosts is
	// empty), read-only.
	hosts, ok := mountAt(s, "/etc/hosts")
	if !ok || hosts.Source != HostsFile || !hasOpt(hosts, "ro") || hasOpt(hosts, "rw") {
		t.Errorf("hosts file mount %+v (present %v), want the bundle's %s read-only", hosts, ok, HostsFile)
	}
	if !strings.Contains(HostsContent, "127.0.0.1\tlocalhost\n") || !strings.Contains(HostsContent, "::1\tlocalhost ") {
		t.Errorf("the hosts file does not name localhost on both loopbacks: %q", HostsContent)
	}
	// Nothing besides the policy's mounts, the init binary and the
	// bundle's hosts file comes from the host.
	for _, m := range s.Mounts {
		if m.Type == "bind" && m.Destination != launch.InitPath && m.Destination != "/etc/hosts" &&
			!slices.ContainsFunc(p.Mounts, func(pm policy.Mount) bool { return pm.Path == m.Destination }) {
			t.Errorf("bind mount %+v is not in the policy", m)
		}
		if strings.Contains(m.Source, "docker.sock") {
			t.Errorf("runtime socket mounted: %+v", m)
		}
	}
	for _, sc := range []struct {
		dest  string
		mode  uint32
		extra []string
	}{
		{ScratchPaths.Tmp, p.Scratch.TmpMode, nil},
		{ScratchPaths.Home, p.Scratch.HomeMode, []string{fmt.Sprintf("uid=%d", p.User.UID), fmt.Sprintf("gid=%d", p.User.GID)}},
	} {
		m, ok := mountAt(s, sc.dest)
		if !ok || m.Type != "tmpfs" {
			t.Errorf("scratch %s: %+v (present %v), want a tmpfs", sc.dest, m, ok)
			continue
		}
		want := append([]string{"nosuid", "nodev", "exec", fmt.Sprintf("size=%d", p.Scratch.Size), fmt.Sprintf("mode=%04o", sc.mode)}, sc.extra...)
		for _, o := range want {
			if !hasOpt(m, o) {
				t.Errorf("scratch %s: options %q lack %s", sc.dest, m.Options, o)
			}
		}
		if hasOpt(m, "noexec") || hasOpt(m, "suid") || hasOpt(m, "dev") {
			t.Errorf("scratch %s: options %q contradict the policy", sc.dest, m.Options)
		}
	}
	if shm, ok := mountAt(s, "/dev/shm"); !ok || !hasOpt(shm, fmt.Sprintf("size=%d", p.Limits.ShmSize)) {
		t.Errorf("/dev/shm %+v, want size %d", shm, p.Limits.ShmSize)
	}
}

func checkExec(t *testing.T, p *policy.Policy, s Spec, cmd backends.Command) {
	t.Helper()
	proc, err := ExecProcess(s)
	if err != nil {
		t.Fatal(err)
	}
	checkProcess(t, "exec", p, proc)
	args := proc.Args
	if len(args) != 3 || args[0] != launch.InitPath || args[1] != string(protocol.EntryExec) {
		t.Fatalf("exec args %q, want the supervisor", args)
	}
	x, err := protocol.DecodeExec(args[2:])
	if err != nil || !slices.Equal(x.Argv, cmd.Argv) {
		t.Fatalf("exec spec %s: %+v, %v; want the command %q", args[2], x, err, cmd.Argv)
	}
	if x.Grace.D() != p.Lifetime.KillGrace {
		t.Errorf("exec spec %s, want grace %s", args[2], p.Lifetime.KillGrace)
	}
	if x.Timeout.D() != max(cmd.Timeout, 0) {
		t.Errorf("exec spec %s, want timeout %s", args[2], cmd.Timeout)
	}
	if proc.Terminal {
		t.Error("exec process allocates a terminal")
	}
}

func TestRenderExecTimeout(t *testing.T) {
	p := buildPolicy(t, profiles.RoleAgent, "")
	for _, cmd := range []backends.Command{
		{Argv: []string{"true"}},
		{Argv: []string{"sleep", "10"}, Timeout: 1500 * time.Millisecond},
		// An argv that looks like the supervisor's own flags stays the command's.
		{Argv: []string{"sh", "--", "--timeout", "0s", "--grace"}, Timeout: time.Minute},
	} {
		t.Run(strings.Join(cmd.Argv, " "), func(t *testing.T) {
			checkExec(t, p, render(t, p, cmd), cmd)
		})
	}
}

func TestRenderCustom(t *testing.T) {
	p := buildPolicy(t, profiles.RoleReproducer, `
[sandbox]
memory = "3g"
cpus = 1.5
pids = 77
user = "4321:4322"
set_env = { LLMFORMAT = "1" }
`)
	s := render(t, p, backends.Command{Argv: []string{"id"}})
	checkProcess(t, "holder", p, s.Process)
	if s.Process.User.UID != 4321 || s.Process.User.GID != 4322 {
		t.Errorf("user %+v, want 4321:4322", s.Process.User)
	}
	r := s.Linux.Resources
	if *r.Memory.Limit != 3<<30 || *r.Memory.Swap != 3<<30 || *r.Pids.Limit != 77 || *r.CPU.Quota != 150000 || *r.CPU.Period != 100000 {
		t.Errorf("resources memory %d/%d pids %d cpu %d/%d", *r.Memory.Limit, *r.Memory.Swap, *r.Pids.Limit, *r.CPU.Quota, *r.CPU.Period)
	}
	if home, ok := mountAt(s, ScratchPaths.Home); !ok || !hasOpt(home, "uid=4321") || !hasOpt(home, "gid=4322") {
		t.Errorf("scratch home %+v, want owned by 4321:4322", home)
	}
	if !slices.Contains(s.Process.Env, "LLMFORMAT=1") {
		t.Errorf("env %q lacks set_env", s.Process.Env)
	}
	checkExec(t, p, s, backends.Command{Argv: []string{"id"}})
}

func TestRenderRefuses(t *testing.T) {
	cmd := backends.Command{Argv: []string{"true"}}
	cases := []struct {
		name    string
		toml    string
		mutate  func(*policy.Policy)
		cmd     backends.Command
		wantErr string
	}{
		{name: "outbound network", toml: "[sandbox]\nnetwork = true\n", cmd: cmd, wantErr: "outbound"},
		{name: "allow_all", toml: "[sandbox]\nallow_all = true\n", cmd: cmd, wantErr: "allow_all"},
		{name: "uid 0", mutate: func(p *policy.Policy) { p.User.UID = 0 }, cmd: cmd, wantErr: "uid 0"},
		{name: "uid 0 gid 0", mutate: func(p *policy.Policy) { p.User = policy.Identity{} }, cmd: cmd, wantErr: "uid 0"},
		{name: "host root", mutate: func(p *policy.Policy) { p.Base = policy.Base{Kind: policy.BaseHost} }, cmd: cmd, wantErr: "image"},
		{name: "host network", mutate: func(p *policy.Policy) { p.Network.Mode = policy.NetworkHost }, cmd: cmd, wantErr: "host"},
		{name: "empty argv", cmd: backends.Command{}, wantErr: "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := buildPolicy(t, profiles.RoleAgent, tc.toml)
			if tc.mutate != nil {
				tc.mutate(p)
			}
			s, err := Render(p, tc.cmd, selfExe)
			if err == nil {
				t.Fatalf("rendered %+v", s.Spec)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not mention %q", err, tc.wantErr)
			}
			if s.Spec != nil {
				t.Errorf("a refusal returned a spec")
			}
		})
	}
}

func TestExecProcessMissing(t *testing.T) {
	if _, err := ExecProcess(Spec{&specs.Spec{}}); err == nil {
		t.Error("a spec without the annotation decoded")
	}
	if _, err := ExecProcess(Spec{&specs.Spec{Annotations: map[string]string{ExecProcessAnnotation: "{"}}}); err == nil {
		t.Error("a broken annotation decoded")
	}
}

// TestSeccompIsTheSandboxProfile: the spec carries the profile the docker
// backend hands its daemon (seccompprofile), resolved for no capabilities
// on this host: AF_VSOCK and the other families a network namespace does
// not confine are refused, and on x86_64 the 32-bit x86 ABI (whose
// socketcall(2) hides the family) is not in the filter.
func TestSeccompIsTheSandboxProfile(t *testing.T) {
	p := buildPolicy(t, profiles.RoleReproducer, "")
	s := render(t, p, backends.Command{Argv: []string{"true"}})
	sc := s.Linux.Seccomp
	// Kernel nil: a kernel new enough for every rule (4.8 is the newest
	// the profile asks about).
	want, err := seccompprofile.Resolve(seccompprofile.Profile(), seccompprofile.Target{Arch: runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sc, want) {
		t.Fatal("the spec's seccomp filter is not seccompprofile's, resolved for no capabilities")
	}
	refused := seccompprofile.Decision{Action: specs.ActErrno, Errno: seccompprofile.RefusedErrno}
	if !slices.Contains(seccompprofile.ErrnoArches, runtime.GOARCH) {
		refused = seccompprofile.Decision{Action: specs.ActErrno, Errno: 1}
	}
	for _, c := range []struct {
		call   string
		family uint64
		want   seccompprofile.Decision
	}{
		{"socket", seccompprofile.AFVsock, refused},
		{"socketpair", seccompprofile.AFVsock, refused},
		{"socket", seccompprofile.AFKCM, refused},
		{"socket", seccompprofile.AFXDP, refused},
		{"socket", seccompprofile.AFInet6, seccompprofile.Decision{Action: specs.ActAllow}},
		{"socketpair", seccompprofile.AFUnix, seccompprofile.Decision{Action: specs.ActAllow}},
	} {
		got, err := seccompprofile.Decide(sc, c.call, c.family)
		if err != nil || got != c.want {
			t.Errorf("%s(%d) = %v (%v), want %v", c.call, c.family, got, err, c.want)
		}
	}
	if runtime.GOARCH == "amd64" && (slices.Contains(sc.Architectures, specs.ArchX86) || !slices.Contains(sc.Architectures, specs.ArchX86_64)) {
		t.Errorf("architectures %v, want x86_64 without x86", sc.Architectures)
	}
}

// TestAdaptToGVisor: under runsc each helper (holder, supervisor,
// exporter) starts as root with only the capabilities to switch identity,
// its spec naming the sandbox identity to take; under runc nothing of it.
// The processes are the ones the backend writes (renderSpec, the
// sandbox's process files).
func TestAdaptToGVisor(t *testing.T) {
	p := buildPolicy(t, profiles.RoleReproducer, "")
	want := protocol.Identity{UID: p.User.UID, GID: p.User.GID}
	for _, rt := range []string{"runc", "runsc"} {
		b := &Backend{selfExe: selfExe, stateDir: t.TempDir()}
		hold, err := b.renderSpec(context.Background(), p, "/nonexistent/"+rt, runtimes.Of(rt), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		s := &sandbox{b: b, p: p, dir: t.TempDir(), traits: runtimes.Of(rt)}
		helpers := map[string]*specs.Process{"holder": hold.Process,
			"supervisor": readProcess(t)(s.execProcessFile(launch.ExecSpec(p, backends.Command{Argv: []string{"true"}}))),
			"exporter":   readProcess(t)(s.exportProcessFile())}
		for name, proc := range helpers {
			t.Run(rt+"/"+name, func(t *testing.T) {
				runAs := helperRunAs(t, proc.Args)
				if rt == "runc" {
					if runAs != nil || proc.User.UID != uint32(p.User.UID) || len(proc.Capabilities.Bounding) != 0 {
						t.Fatalf("runc: run_as %+v, user %+v, caps %+v: want the sandbox identity from the start", runAs, proc.User, proc.Capabilities)
					}
					return
				}
				if runAs == nil || *runAs != want {
					t.Errorf("run_as = %+v, want %+v", runAs, want)
				}
				if proc.User.UID != 0 || proc.User.GID != 0 || len(proc.User.AdditionalGids) != 0 {
					t.Errorf("user = %+v, want root to start", proc.User)
				}
				c := proc.Capabilities
				for set, got := range map[string][]string{"bounding": c.Bounding, "effective": c.Effective, "permitted": c.Permitted} {
					if !slices.Equal(got, launch.IdentityCaps) {
						t.Errorf("%s = %v, want %v", set, got, launch.IdentityCaps)
					}
				}
				if len(c.Inheritable) != 0 || len(c.Ambient) != 0 || !proc.NoNewPrivileges {
					t.Errorf("inheritable %v, ambient %v, no_new_privileges %v", c.Inheritable, c.Ambient, proc.NoNewPrivileges)
				}
			})
		}
	}
}

// readProcess reads a process file the sandbox wrote.
func readProcess(t *testing.T) func(path string, err error) *specs.Process {
	return func(path string, err error) *specs.Process {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var proc specs.Process
		if err := json.Unmarshal(b, &proc); err != nil {
			t.Fatal(err)
		}
		return &proc
	}
}

// helperRunAs is the identity a helper's argv asks it to take.
func helperRunAs(t *testing.T, argv []string) *protocol.Identity {
	t.Helper()
	switch protocol.Entry(argv[1]) {
	case protocol.EntryHold:
		h, err := protocol.DecodeHold(argv[2:])
		if err != nil {
			t.Fatal(err)
		}
		return h.RunAs
	case protocol.EntryExec:
		x, err := protocol.DecodeExec(argv[2:])
		if err != nil {
			t.Fatal(err)
		}
		return x.RunAs
	default:
		e, err := protocol.DecodeExport(argv[2:])
		if err != nil {
			t.Fatal(err)
		}
		return e.RunAs
	}
}

// TestTraitsForSocket: only a sandbox with an allow-list, under a runtime
// that does not connect to bound sockets by itself, is given the flags
// that let its holder reach the proxy's socket.
func TestTraitsForSocket(t *testing.T) {
	for _, tt := range []struct {
		rt   string
		mode policy.NetworkMode
		want bool
	}{
		{"runsc", policy.NetworkProxy, true},
		{"runsc", policy.NetworkLoopback, false},
		{"runc", policy.NetworkProxy, false},
		{"crun", policy.NetworkLoopback, false},
	} {
		p := &policy.Policy{Network: policy.Network{Mode: tt.mode}}
		got := slices.Contains(traitsFor(tt.rt, p).Flags, "--host-uds=open")
		if got != tt.want {
			t.Errorf("%s with network %s: --host-uds=open given %v, want %v", tt.rt, tt.mode, got, tt.want)
		}
	}
}

// Under a runtime that drops maskedPaths (runsc), each masked file is an
// empty read-only bind and each masked directory an empty read-only tmpfs;
// a socket, FIFO or missing path gets none (runtimes.Traits.IgnoresMaskedPaths).
func TestMaskMounts(t *testing.T) {
	dir := t.TempDir()
	file, sub, sock, missing := filepath.Join(dir, "pip.conf"), filepath.Join(dir, ".ssh"), filepath.Join(dir, "d.sock"), filepath.Join(dir, "gone")
	if err := os.WriteFile(file, []byte("token"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, err := maskMounts([]string{file, sub, sock, missing})
	if err != nil {
		t.Fatal(err)
	}
	want := []specs.Mount{
		{Destination: file, Type: "bind", Source: MaskFile, Options: []string{"rbind", "rprivate", "ro", "nosuid", "nodev", "noexec"}},
		{Destination: sub, Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "nosuid", "nodev", "noexec", "mode=0555", "size=4096"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("maskMounts = %+v, want %+v", got, want)
	}
	// The bundle's spec has them last, under runsc only.
	for rt, wantMasks := range map[string]bool{"runsc": true, "runc": false, "": false} {
		p := buildPolicy(t, profiles.RoleAgent, "")
		p.Runtime, p.Masked = rt, append(p.Masked, file)
		s, err := Bundle(p, selfExe, 0)
		if err != nil {
			t.Fatal(err)
		}
		var masks int
		for _, m := range s.Mounts {
			if m.Destination == file && m.Source == MaskFile {
				masks++
			}
		}
		if (masks == 1) != wantMasks {
			t.Errorf("runtime %q: %d mask mounts of %s, want them %v", rt, masks, file, wantMasks)
		}
	}
}
