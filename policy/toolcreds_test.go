package policy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestToolchainCredentialConfigsMasked: the host toolchain's binds (/usr
// on an image, the host roots on a host-root base) carry tool configs
// that can hold tokens (npm's globalconfig /usr/etc/npmrc, pip's site
// config, a system gitconfig, netrc-likes). Each is masked wherever a
// mount or a host root would expose it, whatever `secrets` says, whether
// or not it exists now (npm config set -g writes one later).
func TestToolchainCredentialConfigsMasked(t *testing.T) {
	host := fakeHost(t)
	for _, tc := range []struct {
		name, config string
		caps         []Capability
		want         []string
	}{
		{"image, host toolchain", "", nil, []string{"/usr/etc/npmrc", "/usr/local/etc/npmrc", "/usr/local/etc/gitconfig", "/usr/pip.conf"}},
		{"image, host toolchain, secrets set", "[sandbox]\nsecrets = [\"~/.ssh\"]\n", nil, []string{"/usr/etc/npmrc", "/usr/local/etc/npmrc"}},
		{"host roots", "", capsBut(profiles.CapImageRoot), []string{"/usr/etc/npmrc", "/etc/npmrc", "/etc/gitconfig", "/etc/pip.conf", "/etc/netrc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Build(workspace(t, tc.config), "reproducer", host, Options{Capabilities: tc.caps})
			must(t, err)
			for _, w := range tc.want {
				if !slices.Contains(p.Masked, w) {
					t.Errorf("%s is readable inside: not masked (masked: %v)", w, p.Masked)
				}
			}
		})
	}
}

// TestToolchainCredentialConfigsNotOnImage: the image's own /etc is not
// the host's; nothing is masked where nothing of the host is mounted.
func TestToolchainCredentialConfigsNotOnImage(t *testing.T) {
	p, err := Build(workspace(t, "[sandbox]\ntoolchain = \"image\"\n"), "reproducer", fakeHost(t), Options{})
	must(t, err)
	if slices.Contains(p.Masked, "/usr/etc/npmrc") || slices.Contains(p.Masked, "/etc/gitconfig") {
		t.Errorf("an image toolchain masks host tool configs it never mounts: %v", p.Masked)
	}
}

// TestToolPrefixCredentialConfigsMasked: a tool prefix mounted read_only
// (a node under /opt, a cargo home) has its npmrc, pip.conf and
// credentials masked; the checkout's own etc/npmrc is the project's.
func TestToolPrefixCredentialConfigsMasked(t *testing.T) {
	tool := t.TempDir()
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n[sandbox]\nread_only = [\""+tool+"\"]\n")
	p, err := Build(cfg, "reproducer", fakeHost(t), Options{})
	must(t, err)
	for _, rel := range []string{"etc/npmrc", "pip.conf", "credentials"} {
		if !slices.Contains(p.Masked, filepath.Join(tool, rel)) {
			t.Errorf("%s is readable inside: not masked (%v)", filepath.Join(tool, rel), p.Masked)
		}
	}
	co := filepath.Join(filepath.Dir(cfg.Root), "widgets")
	if slices.Contains(p.Masked, filepath.Join(co, "etc/npmrc")) || slices.Contains(p.Masked, filepath.Join(cfg.Root, "pip.conf")) {
		t.Errorf("the project's own files are masked: %v", p.Masked)
	}
}

// TestToolchainDefaultFollowsTheBackend: the default toolchain is the
// host's where the backend can mount it, the image's where it cannot (a
// cluster: the default config once failed there), and an explicit
// toolchain = "host" on such a backend is refused naming the key. Where
// the backend's sandboxes run elsewhere, each default chosen for that
// reason (the image's toolchain, the checkout's copy) is said in one line
// unless its key is set.
func TestToolchainDefaultFollowsTheBackend(t *testing.T) {
	cluster := profiles.Capabilities() // every capability but host_toolchain
	withHost := append(slices.Clone(cluster), profiles.CapHostToolchain)
	co := "[project]\ncheckout = \"../widgets\"\n"
	hasHostUsr := func(p *Policy) bool {
		return slices.ContainsFunc(p.Mounts, func(m Mount) bool { return m.Path == "/usr" && strings.HasPrefix(m.Why, "host toolchain") })
	}
	for _, tt := range []struct {
		name, config string
		caps         []Capability
		want         bool
		refused      string
		said         []string // the warnings' keys, in order
	}{
		{"docker-like, default", co, withHost, true, "", nil},
		{"cluster, default", co, cluster, false, "", []string{"toolchain", "checkout_writes"}},
		{"cluster, no checkout", "", cluster, false, "", []string{"toolchain"}},
		{"cluster, image", co + "[sandbox]\ntoolchain = \"image\"\n", cluster, false, "", []string{"checkout_writes"}},
		{"cluster, both set", co + "[sandbox]\ntoolchain = \"image\"\ncheckout_writes = \"discard\"\n", cluster, false, "", nil},
		{"cluster, checkout refused", co + "[sandbox]\ncheckout_writes = \"refuse\"\n", cluster, false, "", []string{"toolchain"}},
		{"cluster, host asked", "[sandbox]\ntoolchain = \"host\"\n", cluster, false, `toolchain = "host"`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build(workspace(t, tt.config), "reproducer", fakeHost(t), Options{Backend: "kubernetes", Capabilities: tt.caps})
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.Contains(err.Error(), "host_toolchain") {
					t.Fatalf("err = %v, want a refusal naming %s and host_toolchain", err, tt.refused)
				}
				return
			}
			must(t, err)
			if got := hasHostUsr(p); got != tt.want {
				t.Errorf("host /usr mounted %v, want %v", got, tt.want)
			}
			var said []string
			for _, w := range p.Warnings {
				if k, _, _ := strings.Cut(w, ":"); strings.Contains(w, "run on other machines") {
					said = append(said, k)
				}
			}
			if !slices.Equal(said, tt.said) {
				t.Errorf("said %v (%q), want %v", said, p.Warnings, tt.said)
			}
		})
	}
}
