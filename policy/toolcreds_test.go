package policy

import (
	"path/filepath"
	"slices"
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
