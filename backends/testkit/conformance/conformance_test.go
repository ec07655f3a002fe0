package conformance_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/oci"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

const selfExe = "/opt/triage-sandbox/bin/triage-sandbox"

// dockerScratch is where the docker backend puts HOME and TMPDIR (its
// Sandbox.Scratch; the variable itself is unexported).
var dockerScratch = policy.ScratchPaths{Home: "/home/sandbox", Tmp: "/tmp"}

// layout places the caller's home (which always holds ~/.ssh) relative to
// the workspace.
type layout int

const (
	// homeApart: home and workspace are siblings; nothing needs masking.
	homeApart layout = iota
	// homeIsWorkspace: the workspace is the home itself, so its mount
	// exposes ~/.ssh unless masked.
	homeIsWorkspace
	// workspaceInHome: the workspace is a directory of the home and the
	// project checkout ("..") is the home: its mount exposes ~/.ssh.
	workspaceInHome
)

type policyCase struct {
	name   string
	role   profiles.Role
	layout layout
	// toml is the workspace's triage.toml; "" means the built-in defaults.
	toml string
	// outbound: network on; docker gives it a bridge, oci refuses it.
	outbound bool
	// masked: the policy must mask ~/.ssh.
	masked bool
	check  func(t *testing.T, p *policy.Policy)
}

func cases() []policyCase {
	return []policyCase{
		{name: "agent defaults", role: profiles.RoleAgent},
		{name: "reproducer defaults", role: profiles.RoleReproducer},
		{name: "agent network", role: profiles.RoleAgent, toml: "[sandbox]\nnetwork = true\n", outbound: true},
		{name: "reproducer network", role: profiles.RoleReproducer, toml: "[sandbox.reproducer]\nnetwork = true\n", outbound: true},
		{name: "reproducer allow-list", role: profiles.RoleReproducer, toml: "[sandbox.reproducer]\nnetwork = [\"python\"]\n"},
		{name: "agent workspace is the home", role: profiles.RoleAgent, layout: homeIsWorkspace, masked: true},
		{name: "reproducer workspace in the home", role: profiles.RoleReproducer, layout: workspaceInHome,
			toml: "[project]\ncheckout = \"..\"\n", masked: true},
		{name: "custom limits", role: profiles.RoleReproducer, toml: `
[sandbox]
memory = "3g"
pids = 77
cpus = 1.5
tmpfs_size = "64m"
shm_size = "32m"
set_env = { LLMFORMAT = "1" }
env = ["CONDA_PREFIX"]
`, check: func(t *testing.T, p *policy.Policy) {
			l := p.Limits
			if l.Memory != 3<<30 || l.Pids != 77 || l.CPUs != 1.5 || l.TmpfsSize != 64<<20 || l.ShmSize != 32<<20 {
				t.Fatalf("the config's limits were not applied: %+v", l)
			}
		}},
		{name: "agent limits", role: profiles.RoleAgent, toml: "[sandbox.agent]\nmemory = \"768m\"\npids = 64\ncpus = 0.5\n",
			check: func(t *testing.T, p *policy.Policy) {
				if p.Limits.Memory != 768<<20 || p.Limits.Pids != 64 || p.Limits.CPUs != 0.5 {
					t.Fatalf("the config's limits were not applied: %+v", p.Limits)
				}
			}},
		{name: "sandbox user", role: profiles.RoleAgent, toml: "[sandbox]\nuser = \"4321:4322\"\n",
			check: func(t *testing.T, p *policy.Policy) {
				if p.User.UID != 4321 || p.User.GID != 4322 || !p.User.Switch {
					t.Fatalf("[sandbox] user was not applied: %+v", p.User)
				}
			}},
		{name: "everything", role: profiles.RoleReproducer, layout: homeIsWorkspace, masked: true, toml: `
[sandbox]
user = "2000:2001"
memory = "1g"
pids = 300
cpus = 3
`},
	}
}

// build makes the case's workspace and home and builds its policy for
// docker.
func build(t *testing.T, c policyCase) *policy.Policy {
	t.Helper()
	p, home, err := tryBuild(t, c, policy.Options{Backend: "docker"})
	if err != nil {
		t.Fatal(err)
	}
	return checkCase(t, c, p, home)
}

// tryBuild makes the case's workspace and home and builds its policy
// with opts; home is the caller's home it made.
func tryBuild(t *testing.T, c policyCase, opts policy.Options) (p *policy.Policy, home string, err error) {
	t.Helper()
	base := t.TempDir()
	var ws string
	switch c.layout {
	case homeApart:
		home, ws = filepath.Join(base, "home"), filepath.Join(base, "work")
	case homeIsWorkspace:
		home, ws = filepath.Join(base, "home"), filepath.Join(base, "home")
	case workspaceInHome:
		home, ws = filepath.Join(base, "home"), filepath.Join(base, "home", "triage")
	}
	for _, d := range []string{filepath.Join(home, ".ssh"), ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(ws)
	if c.toml != "" {
		path := filepath.Join(ws, config.FileName)
		if err := os.WriteFile(path, []byte(c.toml), 0o644); err != nil {
			t.Fatal(err)
		}
		if cfg, err = config.Load(path); err != nil {
			t.Fatal(err)
		}
	}
	host := policy.Host{Home: home, UID: 1000, GID: 1000, OS: "linux", Cwd: ws, Env: []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "HOME=" + home, "TMPDIR=/var/tmp",
		"USER=alice", "CONDA_PREFIX=/opt/conda", "AWS_SECRET_ACCESS_KEY=abcdefghijklmnop",
	}}
	p, err = policy.Build(cfg, c.role, host, opts)
	return p, home, err
}

// checkCase checks what the case says of its docker policy.
func checkCase(t *testing.T, c policyCase, p *policy.Policy, home string) *policy.Policy {
	t.Helper()
	ssh := filepath.Join(home, ".ssh")
	if got := slices.Contains(p.Masked, ssh); got != c.masked {
		t.Fatalf("policy masks %q; want %s masked: %v", p.Masked, ssh, c.masked)
	}
	if c.check != nil {
		c.check(t, p)
	}
	return p
}

// rendered is one policy through both renderers.
type rendered struct {
	p       *policy.Policy
	cmd     backends.Command
	dCreate *docker.CreateRequest
	dExec   client.ExecCreateOptions
	oSpec   oci.Spec
	oExec   *specs.Process
}

func renderBoth(t *testing.T, p *policy.Policy, outbound bool) *rendered {
	t.Helper()
	r := &rendered{p: p, cmd: backends.Command{Argv: []string{"python3", "repro.py", "--flag"}, Timeout: 42 * time.Second}}
	var err error
	if r.dCreate, err = docker.Render(p, selfExe, docker.RunInfo{Name: "conformance"}); err != nil {
		t.Fatalf("docker.Render: %v", err)
	}
	if r.dExec, err = docker.RenderExec(p, r.cmd); err != nil {
		t.Fatalf("docker.RenderExec: %v", err)
	}
	r.oSpec, err = oci.Render(p, r.cmd, selfExe)
	if outbound {
		// A route out needs a NAT'd namespace: docker's bridge gives one,
		// the oci renderer has none and must refuse rather than fall back
		// to the host's network.
		if got := r.dCreate.HostConfig.NetworkMode; got != "bridge" {
			t.Errorf("docker network %q, want bridge", got)
		}
		if err == nil {
			t.Fatalf("oci rendered an outbound policy: namespaces %+v", r.oSpec.Linux.Namespaces)
		}
		if !strings.Contains(err.Error(), "outbound") {
			t.Errorf("oci refusal %q does not name the outbound mode", err)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("oci.Render: %v", err)
	}
	if r.oExec, err = oci.ExecProcess(r.oSpec); err != nil {
		t.Fatalf("oci.ExecProcess: %v", err)
	}
	return r
}

func TestRenderersAgree(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			p := build(t, c)
			r := renderBoth(t, p, c.outbound)
			if r == nil {
				// Outbound: no oci spec to compare; the docker side still
				// agrees with itself.
				d, _ := docker.Render(p, selfExe, docker.RunInfo{})
				e, _ := docker.RenderExec(p, backends.Command{Argv: []string{"true"}})
				if !slices.Equal(d.Config.Env, e.Env) {
					t.Errorf("docker container env %q != exec env %q", d.Config.Env, e.Env)
				}
				return
			}
			t.Run("network", r.network)
			t.Run("mounts", r.mounts)
			t.Run("masks", r.masks)
			t.Run("env", r.env)
			t.Run("limits", r.limits)
			t.Run("identity", r.identity)
			t.Run("workdir", r.workdir)
			t.Run("root", r.root)
			t.Run("scratch", r.scratch)
			t.Run("staged", r.staged)
			t.Run("processes", r.processes)
		})
	}
}

func (r *rendered) network(t *testing.T) {
	dNone := r.dCreate.HostConfig.NetworkMode == "none"
	oOwn := false
	for _, ns := range r.oSpec.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			oOwn = ns.Path == ""
		}
	}
	if dNone != oOwn || !dNone {
		t.Errorf("docker network %q, oci own network namespace %v; both must give loopback only", r.dCreate.HostConfig.NetworkMode, oOwn)
	}
	switch r.p.Network.Mode {
	case policy.NetworkLoopback:
	case policy.NetworkProxy:
		r.egress(t)
	default:
		t.Errorf("policy network %q", r.p.Network.Mode)
	}
}

// egress: an allow-list is the loopback-only namespace plus the proxy's
// socket directory bound read-only at launch.EgressDir, and the holder's
// forward, on both renderers.
func (r *rendered) egress(t *testing.T) {
	dBound, oBound := false, false
	for _, m := range r.dCreate.HostConfig.Mounts {
		if m.Target == launch.EgressDir {
			dBound = m.ReadOnly
		}
	}
	for _, m := range r.oSpec.Mounts {
		if m.Destination == launch.EgressDir {
			oBound = slices.Contains(m.Options, "ro")
		}
	}
	if !dBound || !oBound {
		t.Errorf("the proxy's socket directory bound read-only: docker %v, oci %v", dBound, oBound)
	}
	for name, argv := range map[string][]string{"docker": r.dCreate.Config.Cmd, "oci": r.oSpec.Process.Args} {
		h, err := protocol.DecodeHold(argv[len(argv)-1:])
		if err != nil || h.Forward == nil || h.Forward.Listen != egress.ForwardAddr || h.Forward.Socket != egress.SocketInSandbox {
			t.Errorf("%s holder's forward: %+v, %v", name, h.Forward, err)
		}
	}
}

// dockerBinds maps a docker bind target to its read-only flag; the source
// must equal the target (a host path is visible at the same path).
func dockerBinds(t *testing.T, ms []mount.Mount) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		if m.Type == mount.TypeVolume && m.Source == docker.NoSuidVolume(m.Target) {
			// A system directory: the shared read-only, nosuid, nodev
			// bind the local volume driver makes (docker/nosuid.go).
			if m.VolumeOptions == nil || !m.VolumeOptions.NoCopy {
				t.Errorf("docker system volume %+v would be filled from the image", m)
			}
			out[m.Target] = true
			continue
		}
		if m.Type != mount.TypeBind {
			t.Errorf("docker mount %+v is not a bind", m)
			continue
		}
		if m.Target == launch.InitPath {
			if m.Source != selfExe || !m.ReadOnly {
				t.Errorf("docker init binary mount %+v, want %s read-only", m, selfExe)
			}
			continue
		}
		if m.Target == launch.EgressDir {
			continue // the proxy's socket directory: checked by egress
		}
		if m.Source != m.Target {
			t.Errorf("docker bind %s -> %s: not at the same path", m.Source, m.Target)
		}
		if _, dup := out[m.Target]; dup {
			t.Errorf("docker binds %s twice", m.Target)
		}
		out[m.Target] = m.ReadOnly
	}
	return out
}

func ociBinds(t *testing.T, ms []specs.Mount) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		if m.Type != "bind" {
			continue
		}
		ro, rw := slices.Contains(m.Options, "ro"), slices.Contains(m.Options, "rw")
		if ro == rw {
			t.Errorf("oci bind %+v is neither clearly ro nor rw", m)
		}
		if m.Destination == launch.InitPath {
			if m.Source != selfExe || !ro {
				t.Errorf("oci init binary mount %+v, want %s read-only", m, selfExe)
			}
			continue
		}
		if m.Destination == launch.EgressDir {
			continue // the proxy's socket directory: checked by egress
		}
		if m.Destination == "/etc/hosts" {
			// The bundle's own, as Docker's daemon writes its own.
			if m.Source != oci.HostsFile || !ro {
				t.Errorf("oci hosts file mount %+v, want the bundle's %s read-only", m, oci.HostsFile)
			}
			continue
		}
		if m.Source != m.Destination {
			t.Errorf("oci bind %s -> %s: not at the same path", m.Source, m.Destination)
		}
		if _, dup := out[m.Destination]; dup {
			t.Errorf("oci binds %s twice", m.Destination)
		}
		out[m.Destination] = ro
	}
	return out
}

func (r *rendered) mounts(t *testing.T) {
	d, o := dockerBinds(t, r.dCreate.HostConfig.Mounts), ociBinds(t, r.oSpec.Mounts)
	want := map[string]bool{}
	for _, m := range r.p.Mounts {
		if !m.ReadOnly && r.p.Staged() {
			continue // a staged copy: a tmpfs (staged)
		}
		want[m.Path] = m.ReadOnly
	}
	if !maps.Equal(d, o) {
		t.Errorf("host paths differ:\ndocker %v\noci    %v", d, o)
	}
	if !maps.Equal(d, want) {
		t.Errorf("docker binds %v, policy mounts %v", d, want)
	}
	if !slices.ContainsFunc(r.dCreate.HostConfig.Mounts, func(m mount.Mount) bool { return m.Target == launch.InitPath }) ||
		!slices.ContainsFunc(r.oSpec.Mounts, func(m specs.Mount) bool { return m.Destination == launch.InitPath }) {
		t.Error("the init binary is not mounted by both")
	}
	for _, u := range r.p.Unreadable {
		if _, ok := d[u]; ok {
			t.Errorf("credential path %s is mounted", u)
		}
	}
}

func (r *rendered) masks(t *testing.T) {
	d, o := r.dCreate.HostConfig.MaskedPaths, r.oSpec.Linux.MaskedPaths
	for _, m := range append(profiles.KernelMaskedPaths(), r.p.Masked...) {
		if !slices.Contains(d, m) || !slices.Contains(o, m) {
			t.Errorf("%s: masked by docker %v, by oci %v", m, slices.Contains(d, m), slices.Contains(o, m))
		}
	}
	if !sameSet(d, o) {
		t.Errorf("masked paths differ:\ndocker %q\noci    %q", d, o)
	}
	if !sameSet(r.dCreate.HostConfig.ReadonlyPaths, r.oSpec.Linux.ReadonlyPaths) {
		t.Errorf("read-only paths differ:\ndocker %q\noci    %q", r.dCreate.HostConfig.ReadonlyPaths, r.oSpec.Linux.ReadonlyPaths)
	}
}

func (r *rendered) env(t *testing.T) {
	dc, de, oh, oe := r.dCreate.Config.Env, r.dExec.Env, r.oSpec.Process.Env, r.oExec.Env
	if !slices.Equal(dc, de) || !slices.Equal(de, oh) || !slices.Equal(oh, oe) {
		t.Errorf("env differs:\ndocker container %q\ndocker exec      %q\noci process      %q\noci exec         %q", dc, de, oh, oe)
	}
	if want := r.p.EnvList(dockerScratch); !slices.Equal(dc, want) {
		t.Errorf("docker env %q, want the policy's %q", dc, want)
	}
	if want := r.p.EnvList(oci.ScratchPaths); !slices.Equal(oh, want) {
		t.Errorf("oci env %q, want the policy's %q", oh, want)
	}
	for _, c := range []struct {
		name    string
		env     []string
		scratch policy.ScratchPaths
	}{{"docker", dc, dockerScratch}, {"oci", oh, oci.ScratchPaths}} {
		if v := lookup(c.env, "HOME"); v != c.scratch.Home {
			t.Errorf("%s HOME = %q, want its scratch %q", c.name, v, c.scratch.Home)
		}
		if v := lookup(c.env, "TMPDIR"); v != c.scratch.Tmp {
			t.Errorf("%s TMPDIR = %q, want its scratch %q", c.name, v, c.scratch.Tmp)
		}
		if v := lookup(c.env, "TRIAGE_SANDBOX_BACKEND"); v != r.p.Backend {
			t.Errorf("%s TRIAGE_SANDBOX_BACKEND = %q", c.name, v)
		}
		if lookup(c.env, "AWS_SECRET_ACCESS_KEY") != "" {
			t.Errorf("%s env passes a credential", c.name)
		}
	}
}

func lookup(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func (r *rendered) limits(t *testing.T) {
	l, hc, or := r.p.Limits, r.dCreate.HostConfig, r.oSpec.Linux.Resources
	if hc.Memory != l.Memory || hc.MemorySwap != l.Memory || *or.Memory.Limit != l.Memory || *or.Memory.Swap != l.Memory {
		t.Errorf("memory: policy %d, docker %d swap %d, oci %d swap %d", l.Memory, hc.Memory, hc.MemorySwap, *or.Memory.Limit, *or.Memory.Swap)
	}
	if hc.PidsLimit == nil || *hc.PidsLimit != l.Pids || *or.Pids.Limit != l.Pids {
		t.Errorf("pids: policy %d, docker %v, oci %d", l.Pids, hc.PidsLimit, *or.Pids.Limit)
	}
	if q, ok := dockerQuota(hc.NanoCPUs, *or.CPU.Period); !ok || q != *or.CPU.Quota || q <= 0 {
		t.Errorf("cpu: policy %v, docker NanoCPUs %d (quota %d per %dus), oci quota %d per %dus",
			l.CPUs, hc.NanoCPUs, q, *or.CPU.Period, *or.CPU.Quota, *or.CPU.Period)
	}
	dUlimits := map[string][2]int64{}
	for _, u := range hc.Ulimits {
		dUlimits[u.Name] = [2]int64{u.Soft, u.Hard}
	}
	oRlimits := map[string][2]int64{}
	for _, rl := range r.oSpec.Process.Rlimits {
		oRlimits[strings.ToLower(strings.TrimPrefix(rl.Type, "RLIMIT_"))] = [2]int64{int64(rl.Soft), int64(rl.Hard)}
	}
	if !maps.Equal(dUlimits, oRlimits) {
		t.Errorf("rlimits differ: docker %v, oci %v", dUlimits, oRlimits)
	}
	if dUlimits["nofile"] != [2]int64{l.NoFile, l.NoFile} || dUlimits["core"] != [2]int64{0, 0} {
		t.Errorf("rlimits %v, want nofile %d and core 0", dUlimits, l.NoFile)
	}
	if o := r.oSpec.Process.OOMScoreAdj; o == nil || *o != hc.OomScoreAdj || hc.OomScoreAdj != l.OOMScoreAdj {
		t.Errorf("OOM score adj: policy %d, docker %d, oci %v", l.OOMScoreAdj, hc.OomScoreAdj, o)
	}
	if shm, ok := ociMount(r.oSpec, "/dev/shm"); !ok || !slices.Contains(shm.Options, fmt.Sprintf("size=%d", hc.ShmSize)) || hc.ShmSize != l.ShmSize {
		t.Errorf("/dev/shm: policy %d, docker %d, oci %+v", l.ShmSize, hc.ShmSize, shm)
	}
}

// dockerQuota is the CFS quota dockerd derives from NanoCPUs for period
// (daemon: quota = NanoCPUs * period / 1e9).
func dockerQuota(nanoCPUs int64, period uint64) (int64, bool) {
	if nanoCPUs <= 0 {
		return 0, false
	}
	return nanoCPUs * int64(period) / 1e9, true
}

func (r *rendered) identity(t *testing.T) {
	want := strconv.Itoa(r.p.User.UID) + ":" + strconv.Itoa(r.p.User.GID)
	o := r.oSpec.Process.User
	oe := r.oExec.User
	if r.dCreate.Config.User != want || r.dExec.User != want ||
		fmt.Sprintf("%d:%d", o.UID, o.GID) != want || fmt.Sprintf("%d:%d", oe.UID, oe.GID) != want {
		t.Errorf("identity: policy %s, docker %q exec %q, oci %d:%d exec %d:%d", want, r.dCreate.Config.User, r.dExec.User, o.UID, o.GID, oe.UID, oe.GID)
	}
	if r.p.User.UID == 0 {
		t.Error("the policy runs as uid 0")
	}
}

func (r *rendered) workdir(t *testing.T) {
	w := r.p.Workdir
	if r.dCreate.Config.WorkingDir != w || r.dExec.WorkingDir != w || r.oSpec.Process.Cwd != w || r.oExec.Cwd != w {
		t.Errorf("workdir: policy %s, docker %q exec %q, oci %q exec %q", w, r.dCreate.Config.WorkingDir, r.dExec.WorkingDir, r.oSpec.Process.Cwd, r.oExec.Cwd)
	}
}

func (r *rendered) root(t *testing.T) {
	if !r.dCreate.HostConfig.ReadonlyRootfs || !r.oSpec.Root.Readonly {
		t.Errorf("read-only root: docker %v, oci %v", r.dCreate.HostConfig.ReadonlyRootfs, r.oSpec.Root.Readonly)
	}
	if r.dCreate.Config.Hostname != r.oSpec.Hostname {
		t.Errorf("hostname: docker %q, oci %q", r.dCreate.Config.Hostname, r.oSpec.Hostname)
	}
	if r.dCreate.Config.Image != r.p.Base.Image || r.p.Base.Kind != policy.BaseImage {
		t.Errorf("image: docker %q, policy %+v", r.dCreate.Config.Image, r.p.Base)
	}
}

// scratch: the same tmpfs at the same paths, with the same options once
// spelled alike (docker writes modes without a leading 0 and adds rw).
func (r *rendered) scratch(t *testing.T) {
	if dockerScratch != oci.ScratchPaths {
		t.Fatalf("scratch paths differ: docker %+v, oci %+v", dockerScratch, oci.ScratchPaths)
	}
	tmpfs := r.dCreate.HostConfig.Tmpfs
	if want := 2 + len(r.p.Traversable) + len(launch.StagedMounts(r.p)); len(tmpfs) != want {
		t.Errorf("docker tmpfs %v, want HOME, TMPDIR, the traversable and the staged ones (%d)", tmpfs, want)
	}
	for _, dest := range []string{dockerScratch.Home, dockerScratch.Tmp} {
		d, ok := tmpfs[dest]
		if !ok {
			t.Errorf("docker has no tmpfs at %s", dest)
			continue
		}
		o, ok := ociMount(r.oSpec, dest)
		if !ok || o.Type != "tmpfs" {
			t.Errorf("oci has no tmpfs at %s: %+v", dest, o)
			continue
		}
		dn, on := normTmpfs(t, strings.Split(d, ",")), normTmpfs(t, o.Options)
		if !sameSet(dn, on) {
			t.Errorf("%s options differ:\ndocker %q\noci    %q", dest, dn, on)
		}
		for _, want := range []string{"nosuid", "nodev", "exec", fmt.Sprintf("size=%d", r.p.Scratch.Size)} {
			if !slices.Contains(dn, want) {
				t.Errorf("%s options %q lack %s", dest, dn, want)
			}
		}
	}
	home, _ := ociMount(r.oSpec, dockerScratch.Home)
	for _, want := range []string{fmt.Sprintf("uid=%d", r.p.User.UID), fmt.Sprintf("gid=%d", r.p.User.GID), fmt.Sprintf("mode=%o", r.p.Scratch.HomeMode)} {
		if !slices.Contains(normTmpfs(t, home.Options), want) {
			t.Errorf("scratch HOME %q lacks %s", home.Options, want)
		}
	}
}

// staged: every writable directory and skeleton is a bounded tmpfs in
// both, with the same options, and no writable path is a bind.
func (r *rendered) staged(t *testing.T) {
	staged := launch.StagedMounts(r.p)
	if !r.p.AllowAll && len(r.p.Writable()) > 0 && len(staged) == 0 {
		t.Fatalf("no staged mounts for %+v", r.p.Staging)
	}
	for dest, opts := range staged {
		d, ok := r.dCreate.HostConfig.Tmpfs[dest]
		o, ook := ociMount(r.oSpec, dest)
		if !ok || !ook || o.Type != "tmpfs" {
			t.Errorf("%s: docker tmpfs %v, oci %+v", dest, ok, o)
			continue
		}
		dn, on := normTmpfs(t, strings.Split(d, ",")), normTmpfs(t, o.Options)
		if !sameSet(dn, on) || !sameSet(dn, normTmpfs(t, strings.Split(opts, ","))) {
			t.Errorf("%s options differ:\ndocker %q\noci    %q", dest, dn, on)
		}
		for _, want := range []string{"nosuid", "nodev", fmt.Sprintf("size=%d", r.p.Staging.Size), fmt.Sprintf("nr_inodes=%d", r.p.Staging.Inodes), fmt.Sprintf("uid=%d", r.p.User.UID)} {
			if !slices.Contains(dn, want) {
				t.Errorf("%s options %q lack %s", dest, dn, want)
			}
		}
	}
	// Parents are mounted before what lies inside them.
	seen := map[string]int{}
	for i, m := range r.oSpec.Mounts {
		seen[m.Destination] = i
	}
	for dest := range staged {
		for other, i := range seen {
			if strings.HasPrefix(other, dest+"/") && i < seen[dest] {
				t.Errorf("oci mounts %s before its parent %s", other, dest)
			}
		}
	}
}

// normTmpfs drops the default rw and spells mode= in plain octal.
func normTmpfs(t *testing.T, opts []string) []string {
	var out []string
	for _, o := range opts {
		switch {
		case o == "rw":
		case strings.HasPrefix(o, "mode="):
			m, err := strconv.ParseUint(strings.TrimPrefix(o, "mode="), 8, 32)
			if err != nil {
				t.Errorf("bad tmpfs mode %q", o)
			}
			out = append(out, fmt.Sprintf("mode=%o", m))
		default:
			out = append(out, o)
		}
	}
	return out
}

// processes: the holder and the command's supervisor are invoked alike.
func (r *rendered) processes(t *testing.T) {
	if !slices.Equal(r.dCreate.Config.Cmd, r.oSpec.Process.Args) {
		t.Errorf("holder: docker %q, oci %q", r.dCreate.Config.Cmd, r.oSpec.Process.Args)
	}
	if !slices.Equal(r.dExec.Cmd, r.oExec.Args) {
		t.Errorf("exec: docker %q, oci %q", r.dExec.Cmd, r.oExec.Args)
	}
	if a := r.oExec.Args; len(a) != 3 || a[1] != string(protocol.EntryExec) {
		t.Errorf("exec args %q, want the supervisor with its spec", a)
	} else if x, err := protocol.DecodeExec(a[2:]); err != nil || !slices.Equal(x.Argv, r.cmd.Argv) || x.Timeout.D() != r.cmd.Timeout {
		t.Errorf("exec spec %s (%v), want timeout %s and the command %q", a[2], err, r.cmd.Timeout, r.cmd.Argv)
	}
	for name, nnp := range map[string]bool{
		"docker": slices.Contains(r.dCreate.HostConfig.SecurityOpt, "no-new-privileges:true"),
		"oci":    r.oSpec.Process.NoNewPrivileges && r.oExec.NoNewPrivileges,
	} {
		if !nnp {
			t.Errorf("%s: no-new-privileges is off", name)
		}
	}
	if !slices.Equal(r.dCreate.HostConfig.CapDrop, []string{"ALL"}) || len(r.dCreate.HostConfig.CapAdd) != 0 {
		t.Errorf("docker capabilities: drop %q add %q", r.dCreate.HostConfig.CapDrop, r.dCreate.HostConfig.CapAdd)
	}
	for _, c := range []*specs.LinuxCapabilities{r.oSpec.Process.Capabilities, r.oExec.Capabilities} {
		if c == nil || len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) != 0 {
			t.Errorf("oci capabilities %+v, want none", c)
		}
	}
}

func ociMount(s oci.Spec, dest string) (specs.Mount, bool) {
	for _, m := range s.Mounts {
		if m.Destination == dest {
			return m, true
		}
	}
	return specs.Mount{}, false
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// TestRenderersRefuseAlike: what neither may render, both refuse.
func TestRenderersRefuseAlike(t *testing.T) {
	cmd := backends.Command{Argv: []string{"true"}}
	for _, c := range []struct {
		name   string
		toml   string
		mutate func(*policy.Policy)
	}{
		{name: "allow_all", toml: "[sandbox]\nallow_all = true\n"},
		{name: "uid 0", mutate: func(p *policy.Policy) { p.User.UID, p.User.GID = 0, 0 }},
		{name: "host root", mutate: func(p *policy.Policy) { p.Base = policy.Base{Kind: policy.BaseHost, HostRoots: []string{"/usr"}} }},
		{name: "host network", mutate: func(p *policy.Policy) { p.Network.Mode = policy.NetworkHost }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := build(t, policyCase{role: profiles.RoleAgent, toml: c.toml})
			if c.mutate != nil {
				c.mutate(p)
			}
			_, derr := docker.Render(p, selfExe, docker.RunInfo{})
			_, oerr := oci.Render(p, cmd, selfExe)
			if derr == nil || oerr == nil {
				t.Errorf("docker err %v, oci err %v; want both to refuse", derr, oerr)
			}
		})
	}
}

// TestEmptyProgramRefusedAlike: a command with no program is refused by
// both, not rendered by one as an exec of "".
func TestEmptyProgramRefusedAlike(t *testing.T) {
	p := build(t, policyCase{role: profiles.RoleAgent})
	for _, argv := range [][]string{nil, {}, {""}, {"", "x"}} {
		t.Run(fmt.Sprintf("%q", argv), func(t *testing.T) {
			cmd := backends.Command{Argv: argv}
			_, derr := docker.RenderExec(p, cmd)
			s, oerr := oci.Render(p, cmd, selfExe)
			if derr == nil || oerr == nil {
				var args []string
				if proc, err := oci.ExecProcess(s); err == nil {
					args = proc.Args
				}
				t.Errorf("docker err %v; oci err %v (exec args %q); want both to refuse", derr, oerr, args)
			}
		})
	}
}

// TestCPUQuotaAgrees: a CPU limit written with a fraction is the same
// limit in both renderers. dockerd turns NanoCPUs into quota = NanoCPUs *
// 100000 / 1e9; the oci renderer rounds cpus * 100000 the same way, and
// refuses a quota so small that runc would read it as no limit.
func TestCPUQuotaAgrees(t *testing.T) {
	// The config refuses cpus below 0.01; a policy built otherwise is
	// refused by the renderer too.
	tiny := build(t, policyCase{role: profiles.RoleAgent})
	tiny.Limits.CPUs = 0.000001
	if _, err := oci.Render(tiny, backends.Command{Argv: []string{"true"}}, selfExe); err == nil {
		t.Error("cpus = 0.000001 rendered; runc would read its quota as no CPU limit")
	}
	for _, cpus := range []float64{0.25, 0.5, 1, 1.5, 2, 2.3, 0.29, 0.57, 4.35, 0.01} {
		t.Run(strconv.FormatFloat(cpus, 'f', -1, 64), func(t *testing.T) {
			p := build(t, policyCase{role: profiles.RoleAgent, toml: fmt.Sprintf("[sandbox]\ncpus = %v\n", cpus)})
			r := renderBoth(t, p, false)
			q, _ := dockerQuota(r.dCreate.HostConfig.NanoCPUs, *r.oSpec.Linux.Resources.CPU.Period)
			got := *r.oSpec.Linux.Resources.CPU.Quota
			if got != q {
				t.Errorf("cpus = %v: docker quota %d (NanoCPUs %d), oci quota %d", cpus, q, r.dCreate.HostConfig.NanoCPUs, got)
			}
			// runc reads a quota of 0 as "no limit": a policy with a CPU
			// limit must never render as one.
			if got <= 0 {
				t.Errorf("cpus = %v rendered as oci quota %d, which is no CPU limit at all", cpus, got)
			}
		})
	}
}
