package confine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// validPlan is the smallest plan Validate accepts.
func validPlan() Plan {
	return Plan{
		DevShmSize: 1 << 20, Hostname: "sandbox", Workdir: "/", UID: 65534, GID: 65534,
		Landlock: LandlockPlan{MinABI: 1}, Seccomp: SeccompPlan{Set: "default"},
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Plan)
		want   string // substring of the error; "" for valid
	}{
		{"minimal", func(*Plan) {}, ""},
		{"full", func(p *Plan) {
			p.Binds = []Bind{{Source: "/usr"}, {Source: "/home/u/src", Target: "/src", Write: true}}
			p.Tmpfs = []Tmpfs{{Target: "/tmp", Size: 1 << 20, Inodes: 100, Mode: 0o1777}}
			p.Dirs = []Dir{{Path: "/home/u", Mode: 0o755}}
			p.Symlinks = []Symlink{{Path: "/lib", Target: "usr/lib"}}
			p.Masks = []Mask{{Path: "/src/.env"}, {Path: "/proc/kcore"}}
			p.ReadOnly = []string{"/proc/sys"}
			p.Rlimits = []Rlimit{{Name: "CORE"}, {Name: "NOFILE", Soft: 1024, Hard: 4096}}
		}, ""},
		{"relative source", func(p *Plan) { p.Binds = []Bind{{Source: "usr"}} }, "binds[0].source"},
		{"unclean target", func(p *Plan) { p.Binds = []Bind{{Source: "/usr", Target: "/usr/../etc"}} }, "not clean"},
		{"bind on /", func(p *Plan) { p.Binds = []Bind{{Source: "/", Target: "/"}} }, "new root itself"},
		{"bind under /proc", func(p *Plan) { p.Binds = []Bind{{Source: "/x", Target: "/proc/x"}} }, "Enter builds itself"},
		{"tmpfs on /dev", func(p *Plan) { p.Tmpfs = []Tmpfs{{Target: "/dev", Size: 1, Inodes: 1}} }, "Enter builds itself"},
		{"same target twice", func(p *Plan) {
			p.Binds = []Bind{{Source: "/a", Target: "/x"}}
			p.Tmpfs = []Tmpfs{{Target: "/x", Size: 1, Inodes: 1}}
		}, "also the target of binds[0]"},
		{"unbounded tmpfs", func(p *Plan) { p.Tmpfs = []Tmpfs{{Target: "/tmp", Inodes: 1}} }, "always bounded"},
		{"tmpfs mode", func(p *Plan) { p.Tmpfs = []Tmpfs{{Target: "/t", Size: 1, Inodes: 1, Mode: 0o17777}} }, "beyond 07777"},
		{"negative uid", func(p *Plan) { p.UID = -1 }, "uid/gid"},
		{"no hostname", func(p *Plan) { p.Hostname = "" }, "hostname"},
		{"long hostname", func(p *Plan) { p.Hostname = strings.Repeat("h", 65) }, "hostname"},
		{"relative workdir", func(p *Plan) { p.Workdir = "src" }, "workdir"},
		{"unbounded shm", func(p *Plan) { p.DevShmSize = 0 }, "dev_shm_size"},
		{"no landlock", func(p *Plan) { p.Landlock.MinABI = 0 }, "Landlock is required"},
		{"relative landlock path", func(p *Plan) { p.Landlock.ReadOnly = []string{"usr"} }, "landlock.read_only[0]"},
		{"unknown seccomp set", func(p *Plan) { p.Seccomp.Set = "none" }, `unknown seccomp set "none"`},
		{"empty seccomp set", func(p *Plan) { p.Seccomp.Set = "" }, "seccomp.set"},
		{"unknown rlimit", func(p *Plan) { p.Rlimits = []Rlimit{{Name: "FILES"}} }, `unknown limit "FILES"`},
		{"rlimit twice", func(p *Plan) { p.Rlimits = []Rlimit{{Name: "CORE"}, {Name: "CORE"}} }, "given twice"},
		{"soft above hard", func(p *Plan) { p.Rlimits = []Rlimit{{Name: "NOFILE", Soft: 2, Hard: 1}} }, "above hard"},
		{"mask relative", func(p *Plan) { p.Masks = []Mask{{Path: ".ssh"}} }, "masks[0].path"},
		{"symlink without target", func(p *Plan) { p.Symlinks = []Symlink{{Path: "/lib"}} }, "symlinks[0].target"},
		{"discarded bind", func(p *Plan) {
			p.Binds = []Bind{{Source: "/src", Discard: &UpperLayer{Size: 1 << 20, Inodes: 100}}}
		}, ""},
		{"discarded and writable", func(p *Plan) {
			p.Binds = []Bind{{Source: "/src", Write: true, Discard: &UpperLayer{Size: 1 << 20, Inodes: 100}}}
		}, "binds[0].discard"},
		{"unbounded upper layer", func(p *Plan) {
			p.Binds = []Bind{{Source: "/src", Discard: &UpperLayer{Size: 1 << 20}}}
		}, "always bounded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := validPlan()
			c.mutate(&p)
			err := Validate(p)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted; want an error with %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	p := validPlan()
	p.Hostname, p.Workdir, p.Landlock.MinABI = "", "x", 0
	err := Validate(p)
	for _, want := range []string{"hostname", "workdir", "landlock.min_abi"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestPlanJSONRoundTrip(t *testing.T) {
	p := validPlan()
	p.Tmpfs = []Tmpfs{{Target: "/tmp", Size: 1 << 20, Inodes: 100, Mode: 0o1777}}
	p.Dirs = []Dir{{Path: "/home", Mode: 0o755}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"mode":"1777"`)) || !bytes.Contains(b, []byte(`"mode":"0755"`)) {
		t.Errorf("modes are not octal strings: %s", b)
	}
	got, err := ReadPlan(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("round trip changed the plan:\n got %+v\nwant %+v", got, p)
	}
}

func TestReadPlanRefuses(t *testing.T) {
	cases := map[string]string{
		"unknown field": `{"hostname":"h","workdir":"/","dev_shm_size":1,"landlock":{"min_abi":1},` +
			`"seccomp":{"set":"default"},"network":"host"}`,
		"invalid":  `{"hostname":""}`,
		"not json": `hello`,
		"bad mode": `{"dirs":[{"path":"/x","mode":"0999"}]}`,
	}
	for name, in := range cases {
		if _, err := ReadPlan(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestModeJSON(t *testing.T) {
	var m Mode
	for in, want := range map[string]Mode{`"0755"`: 0o755, `"1777"`: 0o1777, `"0"`: 0, `493`: 0o755} {
		if err := json.Unmarshal([]byte(in), &m); err != nil || m != want {
			t.Errorf("%s: got %o, %v; want %o", in, m, err, want)
		}
	}
}

func TestBuildOrder(t *testing.T) {
	p := Plan{
		Binds: []Bind{
			{Source: "/home/u/proj/out", Write: true},
			{Source: "/home/u/proj"},
			{Source: "/usr"},
		},
		Tmpfs:    []Tmpfs{{Target: "/home/u"}, {Target: "/home/u/proj/build"}},
		Dirs:     []Dir{{Path: "/home/u/.cache"}},
		Symlinks: []Symlink{{Path: "/lib", Target: "usr/lib"}},
	}
	var got []string
	for _, s := range buildOrder(p) {
		got = append(got, s.path)
	}
	want := []string{"/usr", "/lib", "/home/u", "/home/u/proj", "/home/u/.cache", "/home/u/proj/out", "/home/u/proj/build"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestLandlockRules(t *testing.T) {
	p := validPlan()
	p.Landlock.ReadOnly = []string{"/usr"}
	p.Landlock.ReadWrite = []string{"/work"}
	p.Sys = true
	rules := LandlockRules(p)
	has := func(path, access string) bool {
		for _, r := range rules {
			if r.Path == path && r.Access == access {
				return true
			}
		}
		return false
	}
	for _, want := range [][2]string{{"/usr", "ro"}, {"/work", "rw"}, {"/proc", "ro"}, {"/sys", "ro"},
		{"/dev/null", "dev"}, {"/dev/pts", "dev"}, {"/dev/shm", "rw"}} {
		if !has(want[0], want[1]) {
			t.Errorf("no %s rule for %s in %+v", want[1], want[0], rules)
		}
	}
	p.Sys = false
	for _, r := range LandlockRules(p) {
		if r.Path == "/sys" {
			t.Error("a /sys rule without /sys")
		}
	}
}
