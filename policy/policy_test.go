package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// workspace makes a temp workspace with a checkout beside it and returns the
// config file loaded from body.
func workspace(t *testing.T, body string) *config.File {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	must(t, os.MkdirAll(root, 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "widgets"), 0o755))
	path := filepath.Join(root, "triage.toml")
	must(t, os.WriteFile(path, []byte(body), 0o644))
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return cfg
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func fakeHost(t *testing.T, env ...string) Host {
	t.Helper()
	return Host{Home: "/home/alice", Env: env, OS: "linux", UID: 1000, GID: 1000, Cwd: "/nonexistent"}
}

func TestDefaultsPerRole(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n[repro]\ntimeout = 90\n")
	root := cfg.Root
	tests := []struct {
		role     profiles.Role
		writable []string
		timeout  string
	}{
		{"agent", []string{".triage", "INDEX.md", "NOTES.md", "issues", "repros"}, "5m0s"},
		{"reproducer", []string{"repros"}, "1m30s"},
	}
	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			p, err := Build(cfg, tt.role, fakeHost(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range p.Writable() {
				rel, _ := filepath.Rel(root, w)
				got = append(got, rel)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.writable) {
				t.Errorf("writable = %v, want %v", got, tt.writable)
			}
			if p.Timeout().String() != tt.timeout {
				t.Errorf("timeout = %s, want %s", p.Timeout(), tt.timeout)
			}
			if !p.Network.LoopbackOnly() {
				t.Error("network should be loopback only by default")
			}
			if p.Backend != "docker" {
				t.Errorf("backend = %s", p.Backend)
			}
			checkout := filepath.Join(filepath.Dir(root), "widgets")
			// The agent's root holds writable files (NOTES.md): it is a
			// staged skeleton whose other entries are read-only mounts.
			rootRO := hasMount(p, root, true)
			if tt.role == "agent" {
				rootRO = slices.Equal(p.Staging.Skeletons, []string{root}) && hasMount(p, filepath.Join(root, "triage.toml"), true)
			}
			if !hasMount(p, checkout, true) || !rootRO {
				t.Errorf("root and checkout must be read-only: %+v %+v", p.Mounts, p.Staging)
			}
			if !p.Staged() || p.Staging.Size <= 0 || p.Staging.Inodes <= 0 {
				t.Errorf("writable paths are not bounded: %+v", p.Staging)
			}
			if !slices.Contains(p.Unreadable, "/home/alice/.ssh") || !slices.Contains(p.Unreadable, "/var/run/docker.sock") {
				t.Errorf("unreadable misses credentials: %v", p.Unreadable)
			}
			if p.User.UID != 1000 {
				t.Errorf("uid = %d, want the caller's", p.User.UID)
			}
		})
	}
}

func hasMount(p *Policy, path string, ro bool) bool {
	for _, m := range p.Mounts {
		if m.Path == path && m.ReadOnly == ro {
			return true
		}
	}
	return false
}

func TestWritableRejected(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, root string)
		path    string
		wantErr string
	}{
		{"dotdot", nil, "../outside", "escapes the workspace root"},
		{"dotdot inside", nil, "repros/../../x", "escapes the workspace root"},
		{"symlink out", func(t *testing.T, root string) {
			must(t, os.Symlink("/etc", filepath.Join(root, "link")))
		}, "link", "is a symlink"},
		{"symlink in", func(t *testing.T, root string) {
			must(t, os.Mkdir(filepath.Join(root, "real"), 0o755))
			must(t, os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link")))
		}, "link", "is a symlink"},
		{"through symlink", func(t *testing.T, root string) {
			must(t, os.Symlink(t.TempDir(), filepath.Join(root, "link")))
		}, "link/sub", "goes through the symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Set the key directly: config.Load already rejects ".." with a
			// line number; the policy must hold even for a File built in code.
			cfg := workspace(t, "")
			cfg.Path = filepath.Join(cfg.Root, "triage.toml")
			cfg.Sandbox.Writable = []string{tt.path}
			if tt.setup != nil {
				tt.setup(t, cfg.Root)
			}
			_, err := Build(cfg, "reproducer", fakeHost(t), Options{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "triage.toml") || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error should name the file and the path: %v", err)
			}
		})
	}
}

func TestMissingCheckoutIsAnError(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../nope\"\n")
	_, err := Build(cfg, "agent", fakeHost(t), Options{})
	if err == nil || !strings.Contains(err.Error(), "checkout") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v", err)
	}
}

// TestHostPreparation: the policy says what the run must prepare on the
// host (package hostprep does it): each writable path, walked from the
// workspace root, granted to the sandbox identity only where it writes
// the host's path itself.
func TestHostPreparation(t *testing.T) {
	cfg := workspace(t, "")
	p, err := Build(cfg, "agent", Host{Home: "/h", OS: "linux", UID: os.Getuid(), GID: os.Getgid()}, Options{})
	must(t, err)
	got := map[string]HostPath{}
	for _, w := range p.HostPreparation() {
		got[w.Rel] = w
	}
	for rel, file := range map[string]bool{"issues": false, "repros": false, ".triage": false, "NOTES.md": true, "INDEX.md": true} {
		w, ok := got[rel]
		if !ok || w.Base != cfg.Root || w.Path != filepath.Join(cfg.Root, rel) || w.File != file || w.Grant == p.Staged() {
			t.Errorf("%s: %+v (listed %v), want a %s walked from %s, granted %v", rel, w, ok, map[bool]string{true: "file", false: "directory"}[file], cfg.Root, !p.Staged())
		}
	}
	if len(got) != 5 {
		t.Errorf("preparation %+v, want the five writable paths", got)
	}
	p.AllowAll = true
	if w := p.HostPreparation(); len(w) != 0 {
		t.Errorf("allow_all prepares %+v", w)
	}
}

func TestEnvFiltering(t *testing.T) {
	cfg := workspace(t, "[sandbox]\nenv = [\"PIXI_*\", \"TOKENIZER_*\", \"EXACT_API_KEY\", \"CONDA_PREFIX\"]\n[sandbox.agent]\nset_env = { LLMFORMAT = \"1\" }\n")
	host := fakeHost(t,
		"PATH=/usr/bin", "HOME=/home/alice", "LANG=C.UTF-8", "LC_ALL=C",
		"USER=alice", "TERM=xterm",
		"GITHUB_TOKEN=ghp_canary", "ANTHROPIC_API_KEY=sk-canary",
		"TRIAGE_GITHUB_TOKEN=canary", "TRIAGE_ISSUE=7",
		"PIXI_PROJECT=x", "PIXI_AUTH_TOKEN=canary", "TOKENIZER_DIR=/t",
		"EXACT_API_KEY=passed-on-purpose", "CONDA_PREFIX=/opt/conda",
		"AWS_SECRET_ACCESS_KEY=canary", "AUTHORIZATION=canary", "RANDOM_THING=1",
	)
	tests := []struct {
		role    profiles.Role
		pass    []string
		blocked []string
	}{
		{"reproducer",
			[]string{"PATH", "LANG", "LC_ALL", "USER", "TERM", "TRIAGE_ISSUE", "PIXI_PROJECT", "TOKENIZER_DIR", "EXACT_API_KEY", "CONDA_PREFIX", "TRIAGE_SANDBOX_BACKEND"},
			[]string{"GITHUB_TOKEN", "ANTHROPIC_API_KEY", "TRIAGE_GITHUB_TOKEN", "PIXI_AUTH_TOKEN", "AWS_SECRET_ACCESS_KEY", "AUTHORIZATION", "RANDOM_THING", "LLMFORMAT"}},
		{"agent",
			[]string{"PATH", "LANG", "LC_ALL", "PIXI_PROJECT", "LLMFORMAT"},
			[]string{"USER", "TERM", "TRIAGE_ISSUE", "GITHUB_TOKEN", "TRIAGE_GITHUB_TOKEN", "PIXI_AUTH_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			p, err := Build(cfg, tt.role, host, Options{})
			must(t, err)
			got := map[string]string{}
			scratch := ScratchPaths{Home: "/scratch/home", Tmp: "/scratch/tmp"}
			for _, kv := range p.EnvList(scratch) {
				name, value, _ := strings.Cut(kv, "=")
				if _, dup := got[name]; dup {
					t.Errorf("%s set twice", name)
				}
				got[name] = value
			}
			for _, n := range tt.pass {
				if _, ok := got[n]; !ok {
					t.Errorf("%s should pass", n)
				}
			}
			for _, n := range tt.blocked {
				if _, ok := got[n]; ok {
					t.Errorf("%s must not pass", n)
				}
			}
			if got["HOME"] != scratch.Home || got["TMPDIR"] != scratch.Tmp {
				t.Errorf("HOME/TMPDIR must be the scratch: %q %q", got["HOME"], got["TMPDIR"])
			}
			for _, v := range got {
				if strings.Contains(v, "canary") {
					t.Errorf("a canary value leaked: %q", v)
				}
			}
		})
	}
	p, err := Build(cfg, "reproducer", host, Options{})
	must(t, err)
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "EXACT_API_KEY") }) {
		t.Errorf("passing an exact credential name must warn: %v", p.Warnings)
	}
}

func TestIdentityNeverRoot(t *testing.T) {
	cfg := workspace(t, "")
	host := Host{Home: "/root", OS: "linux", UID: 0, GID: 0}
	p, err := Build(cfg, "reproducer", host, Options{})
	must(t, err)
	if p.User.UID == 0 {
		t.Fatalf("uid 0 inside: %+v", p.User)
	}
}

func TestMaskedCredentialUnderMount(t *testing.T) {
	cfg := workspace(t, "")
	// The workspace is the home directory: its .ssh must be masked.
	host := Host{Home: cfg.Root, OS: "linux", UID: 1000, GID: 1000}
	p, err := Build(cfg, "agent", host, Options{})
	must(t, err)
	if !slices.Contains(p.Masked, filepath.Join(cfg.Root, ".ssh")) {
		t.Errorf("~/.ssh under the workspace must be masked: %v", p.Masked)
	}
}

func TestHashStableAndSensitive(t *testing.T) {
	cfg := workspace(t, "")
	host := fakeHost(t, "PATH=/usr/bin")
	a, err := Build(cfg, "agent", host, Options{})
	must(t, err)
	b, err := Build(cfg, "agent", host, Options{})
	must(t, err)
	if a.Hash() != b.Hash() {
		t.Fatal("hash not stable")
	}
	b.Network.Mode = NetworkOutbound
	if a.Hash() == b.Hash() {
		t.Fatal("hash ignores the network")
	}
}

func TestBackendChoice(t *testing.T) {
	cfg := workspace(t, "[sandbox]\nbackend = \"local\"\n")
	tests := []struct {
		name string
		env  []string
		os   string
		flag string
		want string
	}{
		{"config", nil, "linux", "", "local"},
		{"env overrides config", []string{"TRIAGE_SANDBOX=docker"}, "linux", "", "docker"},
		{"flag overrides env", []string{"TRIAGE_SANDBOX=docker"}, "linux", "seatbelt", "seatbelt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := fakeHost(t, tt.env...)
			h.OS = tt.os
			p, err := Build(cfg, "agent", h, Options{Backend: tt.flag})
			must(t, err)
			if p.Backend != tt.want {
				t.Errorf("backend = %s, want %s", p.Backend, tt.want)
			}
		})
	}
}

// A writable path inside another is staged once, with its parent.
func TestNestedWritableStagedOnce(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "repros", "out"), 0o755)
	os.WriteFile(filepath.Join(root, "triage.toml"), []byte("[sandbox]\nwritable = [\"repros\", \"repros/out\", \"repros/x.md\"]\n"), 0o644)
	cfg, err := config.Load(filepath.Join(root, "triage.toml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(cfg, "reproducer", fakeHost(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Writable(); len(got) != 1 || got[0] != filepath.Join(root, "repros") {
		t.Errorf("writable = %v, want only repros", got)
	}
}

// TestIdentityCheckoutOwner: root runs triage-sandbox (CI in a container)
// with a root-owned workspace and a user's checkout: the sandbox runs as
// the checkout's owner, so it writes in its discarded checkout what that
// owner could; with the checkout's writes refused, nothing changes.
func TestIdentityCheckoutOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("gives the checkout to another uid: needs root")
	}
	host := Host{Home: "/root", OS: "linux", UID: 0, GID: 0}
	tests := []struct {
		name, body   string
		checkoutUID  int
		wantUID      int
		wantWhyStart string
	}{
		{"user's checkout", "[project]\ncheckout = \"../widgets\"\n", 1000, 1000, "the checkout's owner"},
		{"root's checkout", "[project]\ncheckout = \"../widgets\"\n", 0, 65534, "nobody"},
		{"writes refused", "[project]\ncheckout = \"../widgets\"\n[sandbox]\ncheckout_writes = \"refuse\"\n", 1000, 65534, "nobody"},
		{"no checkout", "", 1000, 65534, "nobody"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := workspace(t, tt.body)
			must(t, os.Chown(filepath.Join(filepath.Dir(cfg.Root), "widgets"), tt.checkoutUID, tt.checkoutUID))
			p, err := Build(cfg, "reproducer", host, Options{})
			must(t, err)
			if p.User.UID != tt.wantUID || p.User.GID != tt.wantUID || !strings.HasPrefix(p.User.Why, tt.wantWhyStart) {
				t.Errorf("identity %+v, want %d:%d (%s…)", p.User, tt.wantUID, tt.wantUID, tt.wantWhyStart)
			}
		})
	}
}

// TestHashCoversEveryField: every field of Policy is hashed or listed in
// unhashed with a reason, and changing a hashed field changes the hash
// (a field the hash skipped silently would keep a warm sandbox after the
// change: namespace, once).
func TestHashCoversEveryField(t *testing.T) {
	typ := reflect.TypeOf(Policy{})
	for name := range unhashed {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("unhashed names %s, which Policy has no more", name)
		}
	}
	base := Policy{Role: "agent", Backend: "docker"}
	for i := range typ.NumField() {
		f := typ.Field(i)
		p := base
		v := reflect.ValueOf(&p).Elem().Field(i)
		if !setSomething(v) {
			t.Fatalf("the test cannot set %s (%s): teach setSomething", f.Name, f.Type)
		}
		_, skipped := unhashed[f.Name]
		if changed := p.Hash() != base.Hash(); changed == skipped {
			t.Errorf("%s: hash changed %v, but unhashed lists it %v", f.Name, changed, skipped)
		}
	}
}

// setSomething gives v a non-zero value the hash must see, or reports
// that it cannot.
func setSomething(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		setSomething(s.Index(0))
		v.Set(s)
	case reflect.Pointer:
		n := reflect.New(v.Type().Elem())
		setSomething(n.Elem())
		v.Set(n)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if v.Type().Field(i).IsExported() && v.Type().Field(i).Name != "Why" && setSomething(f) {
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}
