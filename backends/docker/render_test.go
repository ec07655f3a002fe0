package docker

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/seccompprofile"
)

func renderRole(t *testing.T, role profiles.Role, host policy.Host) (*policy.Policy, *CreateRequest) {
	t.Helper()
	root := t.TempDir()
	if host.Home == "" {
		host.Home = "/home/alice"
	}
	p, err := policy.Build(config.Default(root), role, host, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req, err := Render(p, "/usr/local/bin/triage-sandbox", RunInfo{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return p, req
}

// TestRenderCISSection5 checks the docker-bench-security section 5 items that
// apply to one container (research/docker.md §4), for both roles.
func TestRenderCISSection5(t *testing.T) {
	sensitive := []string{"/", "/boot", "/dev", "/etc", "/lib", "/proc", "/sys", "/usr"}
	toolchainDirs := []string{"/usr", "/lib"}
	for _, role := range profiles.Roles() {
		t.Run(string(role), func(t *testing.T) {
			_, req := renderRole(t, role, policy.Host{UID: 1000, GID: 1000, OS: "linux"})
			hc, cfg := req.HostConfig, req.Config
			checks := []struct {
				id string
				ok bool
			}{
				{"5.2 AppArmor not unconfined", !slices.ContainsFunc(hc.SecurityOpt, func(s string) bool { return strings.Contains(s, "apparmor") })},
				{"5.4 no added capabilities", len(hc.CapAdd) == 0 && slices.Equal(hc.CapDrop, []string{"ALL"})},
				{"5.5 not privileged", !hc.Privileged},
				// CIS's concern is changes to the host ("especially in read-write
				// mode"): /usr and /lib may come in read-only as the host
				// toolchain (toolchain = "image" mounts neither); the rest never.
				{"5.6 no sensitive host dirs", !slices.ContainsFunc(hc.Mounts, func(m mountT) bool {
					src, ro := m.Source, m.ReadOnly
					if m.Type == mount.TypeVolume && m.Source == NoSuidVolume(m.Target) {
						// The host directory the volume binds, read-only by
						// its options (nosuidOptions).
						src, ro = m.Target, strings.Contains(","+nosuidOptions(m.Target)["o"]+",", ",ro,")
					}
					return slices.Contains(sensitive, src) && !(ro && slices.Contains(toolchainDirs, src))
				})},
				{"5.8/5.9/5.14 no published ports", len(hc.PortBindings) == 0 && !hc.PublishAllPorts},
				{"5.10 network not host", hc.NetworkMode == "none"},
				{"5.11 memory limited, no swap", hc.Memory > 0 && hc.MemorySwap == hc.Memory},
				{"5.12 CPU limited", hc.NanoCPUs > 0},
				{"5.13 read-only root filesystem", hc.ReadonlyRootfs},
				{"5.15 no restart", hc.RestartPolicy.Name == "no"},
				{"5.16 private PID namespace", hc.PidMode == ""},
				{"5.17 private IPC namespace", hc.IpcMode == "private"},
				{"5.18 no host devices", len(hc.Devices) == 0},
				{"5.19 ulimits set", len(hc.Ulimits) > 0},
				// A system directory's nosuid volume takes no bind options:
				// the daemon makes its mount a slave (master:N in mountinfo,
				// measured), host to sandbox only, never shared, which is
				// 5.20's concern; the sandbox cannot mount anything anyway.
				{"5.20 mount propagation private", !slices.ContainsFunc(hc.Mounts, func(m mountT) bool {
					if m.Type == mount.TypeVolume && m.Source == NoSuidVolume(m.Target) {
						return false
					}
					return m.BindOptions == nil || m.BindOptions.Propagation != "rprivate"
				})},
				{"5.21 private UTS namespace", hc.UTSMode == ""},
				{"5.22 seccomp: the sandbox's own profile, narrowing Docker's default", ownSeccomp(t, hc.SecurityOpt)},
				{"5.25 no cgroup parent", hc.CgroupParent == ""},
				{"5.26 no-new-privileges", slices.Contains(hc.SecurityOpt, "no-new-privileges:true")},
				{"5.29 pids limited", hc.PidsLimit != nil && *hc.PidsLimit > 0},
				{"5.31 user namespace not host", hc.UsernsMode == ""},
				{"5.32 no docker.sock", !slices.ContainsFunc(hc.Mounts, func(m mountT) bool { return strings.Contains(m.Source, "docker.sock") })},
				{"the holder is pid 1 (no docker-init)", hc.Init != nil && !*hc.Init},
				{"non-root user", cfg.User != "" && !strings.HasPrefix(cfg.User, "0:") && cfg.User != "0"},
				{"labels", cfg.Labels["io.triage-sandbox.owner"] == "triage-sandbox"},
				{"no image entrypoint", cfg.Entrypoint != nil && len(cfg.Entrypoint) == 0},
			}
			for _, c := range checks {
				if !c.ok {
					t.Errorf("%s: violated", c.id)
				}
			}
		})
	}
}

// seccompOpt returns the profile SecurityOpt carries, decoded; ok is false
// when there is none, or more than one.
func seccompOpt(opts []string) (*seccomp.Seccomp, string, bool) {
	var raw []string
	for _, o := range opts {
		if v, ok := strings.CutPrefix(o, "seccomp="); ok {
			raw = append(raw, v)
		}
	}
	if len(raw) != 1 {
		return nil, "", false
	}
	var p seccomp.Seccomp
	if err := json.Unmarshal([]byte(raw[0]), &p); err != nil {
		return nil, "", false
	}
	return &p, raw[0], true
}

// ownSeccomp: the daemon gets seccompprofile's profile explicitly (its own
// built-in default depends on the engine), and that profile allows nothing
// Docker's default refuses, on every architecture and capability set.
func ownSeccomp(t *testing.T, opts []string) bool {
	t.Helper()
	p, raw, ok := seccompOpt(opts)
	if !ok || raw != seccompprofile.JSON() {
		t.Logf("SecurityOpt has no seccomp= with the sandbox's profile: %.200q", opts)
		return false
	}
	for _, arch := range []string{"amd64", "arm64", "s390x", "ppc64le", "riscv64"} {
		for _, caps := range [][]string{nil, {"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SYS_PTRACE"}} {
			if err := seccompprofile.Narrows(p, seccompprofile.DockerDefault(), seccompprofile.Target{Arch: arch, Caps: caps}); err != nil {
				t.Logf("%s %v: %v", arch, caps, err)
				return false
			}
		}
	}
	return true
}

// TestRenderSeccompRefusesVsock: the rendered profile refuses the socket
// families a network namespace does not confine, AF_VSOCK first, with
// EAFNOSUPPORT, and still allows the ones it does.
func TestRenderSeccompRefusesVsock(t *testing.T) {
	_, req := renderRole(t, "reproducer", policy.Host{UID: 1000, GID: 1000, OS: "linux"})
	p, _, ok := seccompOpt(req.HostConfig.SecurityOpt)
	if !ok {
		t.Fatalf("no seccomp profile in %.200q", req.HostConfig.SecurityOpt)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		sc, err := seccompprofile.Resolve(p, seccompprofile.Target{Arch: arch})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			call   string
			family uint64
			want   seccompprofile.Decision
		}{
			{"socket", seccompprofile.AFVsock, seccompprofile.Decision{Action: specs.ActErrno, Errno: 97}},
			{"socketpair", seccompprofile.AFVsock, seccompprofile.Decision{Action: specs.ActErrno, Errno: 97}},
			{"socket", seccompprofile.AFBlue, seccompprofile.Decision{Action: specs.ActErrno, Errno: 97}},
			{"socket", 1<<32 | seccompprofile.AFVsock, seccompprofile.Decision{Action: specs.ActErrno, Errno: 97}},
			{"socket", seccompprofile.AFInet, seccompprofile.Decision{Action: specs.ActAllow}},
			{"socket", seccompprofile.AFUnix, seccompprofile.Decision{Action: specs.ActAllow}},
		} {
			got, err := seccompprofile.Decide(sc, c.call, c.family)
			if err != nil || got != c.want {
				t.Errorf("%s: %s(%d) = %v (%v), want %v", arch, c.call, c.family, got, err, c.want)
			}
		}
	}
}

func TestRenderNeverRootEvenForRootCaller(t *testing.T) {
	_, req := renderRole(t, "reproducer", policy.Host{UID: 0, GID: 0, OS: "linux"})
	if req.Config.User == "" || strings.HasPrefix(req.Config.User, "0:") {
		t.Fatalf("user = %q", req.Config.User)
	}
}

func TestRenderMountsExactlyThePolicy(t *testing.T) {
	p, req := renderRole(t, "agent", policy.Host{UID: 1000, GID: 1000, OS: "linux"})
	var got []string
	for _, m := range req.HostConfig.Mounts {
		if m.Target == launch.InitPath {
			if !m.ReadOnly {
				t.Error("init binary must be read-only")
			}
			continue
		}
		if m.Type == mount.TypeVolume && m.Source == NoSuidVolume(m.Target) {
			// A system directory through its nosuid volume: read-only by
			// its source, the container's mount left unmarked (nosuid.go).
			if !slices.ContainsFunc(p.Mounts, func(pm policy.Mount) bool { return pm.Path == m.Target && pm.ReadOnly && pm.System }) {
				t.Errorf("nosuid volume at %s is not a read-only system mount of the policy", m.Target)
			}
			got = append(got, m.Target)
			continue
		}
		if m.Source != m.Target {
			t.Errorf("%s mounted at %s: paths must match", m.Source, m.Target)
		}
		got = append(got, m.Source)
		if !slices.ContainsFunc(p.Mounts, func(pm policy.Mount) bool { return pm.Path == m.Source && pm.ReadOnly == m.ReadOnly }) {
			t.Errorf("mount %s (ro=%v) is not in the policy", m.Source, m.ReadOnly)
		}
	}
	if len(got) != len(p.Mounts) {
		t.Errorf("mounts %v, policy has %d", got, len(p.Mounts))
	}
	if !slices.Equal(req.Config.Env, p.EnvList(scratchPaths)) {
		t.Errorf("env %v differs from the policy's %v", req.Config.Env, p.EnvList(scratchPaths))
	}
}

func TestRenderMasksCredentialsUnderMounts(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Build(config.Default(root), "agent", policy.Host{Home: root, UID: 1000, GID: 1000, OS: "linux"}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req, err := Render(p, "/bin/true", RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(req.HostConfig.MaskedPaths, filepath.Join(root, ".ssh")) {
		t.Errorf("masked = %v", req.HostConfig.MaskedPaths)
	}
	if !slices.Contains(req.HostConfig.MaskedPaths, "/proc/kcore") {
		t.Error("docker's default masked paths must be kept")
	}
}

func TestRenderNetworkOn(t *testing.T) {
	root := t.TempDir()
	cfg := config.Default(root)
	cfg.Sandbox.Network = &config.Network{On: true}
	p, err := policy.Build(cfg, "agent", policy.Host{Home: "/h", UID: 1000, GID: 1000, OS: "linux"}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req, err := Render(p, "/bin/true", RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if req.HostConfig.NetworkMode != "bridge" {
		t.Errorf("network = %s", req.HostConfig.NetworkMode)
	}
}

func TestProcStartTime(t *testing.T) {
	line := "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10"
	if got := ownership.StatStartTime(line); got != "987654" {
		t.Errorf("got %q", got)
	}
}

type mountT = mount.Mount

// Under gVisor the process limit is gVisor's RLIMIT_NPROC (the host's pids
// cgroup counts gVisor's threads), no socket is bound in (gVisor cannot
// mount one), every exec loads the sandbox's seccomp filter itself, and
// the helpers start as root to take the sandbox identity themselves.
func TestRenderUnderGVisor(t *testing.T) {
	for _, runtime := range []string{"", "runsc"} {
		t.Run("runtime="+runtime, func(t *testing.T) {
			p, _ := renderRole(t, "agent", policy.Host{UID: 1000, GID: 1000, OS: "linux"})
			p.Runtime = runtime
			req, err := Render(p, "/usr/local/bin/triage-sandbox", RunInfo{Name: "x"})
			if err != nil {
				t.Fatal(err)
			}
			nproc := slices.IndexFunc(req.HostConfig.Ulimits, func(u *container.Ulimit) bool { return u.Name == "nproc" })
			exec, err := RenderExec(p, backends.Command{Argv: []string{"true"}})
			if err != nil {
				t.Fatal(err)
			}
			x, err := protocol.DecodeExec(exec.Cmd[2:])
			if err != nil {
				t.Fatal(err)
			}
			seccompFlag := x.Seccomp != ""
			gvisor := runtime == "runsc"
			if gvisor != (nproc >= 0) || gvisor != seccompFlag || gvisor != (*req.HostConfig.PidsLimit > p.Limits.Pids) {
				t.Errorf("nproc ulimit at %d, exec --seccomp %v, pids limit %d (policy %d); want all gVisor's: %v",
					nproc, seccompFlag, *req.HostConfig.PidsLimit, p.Limits.Pids, gvisor)
			}
			// The holder and each exec start as root, able only to switch
			// identity, and take the sandbox's themselves.
			h, err := protocol.DecodeHold(req.Config.Cmd[2:])
			if err != nil {
				t.Fatal(err)
			}
			want := &protocol.Identity{UID: p.User.UID, GID: p.User.GID}
			asRoot := req.Config.User == "0:0" && exec.User == "0:0" && slices.Equal(req.HostConfig.CapAdd, launch.IdentityCaps) &&
				reflect.DeepEqual(h.RunAs, want) && reflect.DeepEqual(x.RunAs, want)
			asSandbox := req.Config.User == user(p) && exec.User == user(p) && len(req.HostConfig.CapAdd) == 0 && h.RunAs == nil && x.RunAs == nil
			if (gvisor && !asRoot) || (!gvisor && !asSandbox) {
				t.Errorf("holder user %q run_as %+v, exec user %q run_as %+v, cap add %v under %q", req.Config.User, h.RunAs, exec.User, x.RunAs, req.HostConfig.CapAdd, runtime)
			}
			before := h
			ln := withControl(runtimes.Of(p.Runtime), p, req)
			if ln != nil {
				defer ln.Close()
			}
			if (ln != nil) == gvisor {
				t.Errorf("control socket bound: %v under %q", ln != nil, runtime)
			}
			// The control socket lands in the holder's spec, which keeps the
			// rest of what was rendered (encoded from the typed spec).
			after, err := protocol.DecodeHold(req.Config.Cmd[2:])
			if err != nil {
				t.Fatal(err)
			}
			if ln != nil && after.ControlSock == "" {
				t.Error("the holder's spec does not name the control socket")
			}
			after.ControlSock = ""
			if !reflect.DeepEqual(after, before) || len(before.Modes) == 0 {
				t.Errorf("the holder's spec changed past its control socket: %+v -> %+v", before, after)
			}
		})
	}
}

// runsc drops MaskedPaths: under it each masked file is /dev/null bound
// read-only and each masked directory an empty read-only tmpfs; a socket
// and a missing path get none. Under runc the list alone does it.
func TestRenderMasksUnderGVisor(t *testing.T) {
	dir := t.TempDir()
	file, sub, sock := filepath.Join(dir, "npmrc"), filepath.Join(dir, ".ssh"), filepath.Join(dir, "d.sock")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
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
	for _, runtime := range []string{"", "runsc"} {
		p, _ := renderRole(t, "agent", policy.Host{UID: 1000, GID: 1000, OS: "linux"})
		p.Runtime = runtime
		p.Masked = append(p.Masked, file, sub, sock, filepath.Join(dir, "gone"))
		req, err := Render(p, "/usr/local/bin/triage-sandbox", RunInfo{Name: "x"})
		if err != nil {
			t.Fatal(err)
		}
		var got []mountT
		for _, m := range req.HostConfig.Mounts {
			if strings.HasPrefix(m.Target, dir+"/") {
				got = append(got, m)
			}
		}
		var want []mountT
		if runtime == "runsc" {
			want = []mountT{
				{Type: mount.TypeBind, Source: "/dev/null", Target: file, ReadOnly: true, BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}},
				{Type: mount.TypeTmpfs, Target: sub, ReadOnly: true, TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o555}},
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("runtime %q: mask mounts %+v, want %+v", runtime, got, want)
		}
		if !slices.Contains(req.HostConfig.MaskedPaths, file) {
			t.Errorf("runtime %q: MaskedPaths lacks %s", runtime, file)
		}
	}
}

// TestRenderSystemDirsThroughNoSuidVolumes: every read-only system
// directory is its shared nosuid volume, never a plain bind (whose
// options cannot say nosuid), and never filled from the image.
func TestRenderSystemDirsThroughNoSuidVolumes(t *testing.T) {
	p, req := renderRole(t, "reproducer", policy.Host{UID: 1000, GID: 1000, OS: "linux"})
	n := 0
	for _, pm := range p.Mounts {
		if !pm.System || pm.Kind != "dir" {
			continue
		}
		n++
		i := slices.IndexFunc(req.HostConfig.Mounts, func(m mount.Mount) bool { return m.Target == pm.Path })
		if i < 0 {
			t.Fatalf("system directory %s not rendered", pm.Path)
		}
		m := req.HostConfig.Mounts[i]
		if m.Type != mount.TypeVolume || m.Source != NoSuidVolume(pm.Path) || m.VolumeOptions == nil || !m.VolumeOptions.NoCopy {
			t.Errorf("system directory %s rendered as %+v, want its nosuid volume without copy", pm.Path, m)
		}
	}
	if n == 0 {
		t.Fatal("no system directory in the policy to check")
	}
	if o := nosuidOptions("/usr"); o["o"] != "bind,ro,nosuid,nodev" || o["device"] != "/usr" || o["type"] != "none" {
		t.Errorf("volume options %v", o)
	}
}
