//go:build linux

package integration_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestNoCredentialInWhatTheSandboxReads, on every backend: the checkout's
// persisted job token (an actions/checkout extraheader) and the tool
// configs of a read-only tool prefix (npm's globalconfig, pip's site
// config) are unreadable in any form; git still works in the checkout;
// the host system directories are nosuid,nodev.
func TestNoCredentialInWhatTheSandboxReads(t *testing.T) {
	const token = "ghs_CREDSCANARYCREDSCANARYCREDSCANARY0000"
	header := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		testenv.PersistedCheckout(t, f.checkout, token)
		prefix := filepath.Join(filepath.Dir(f.root), "node")
		for rel, content := range map[string]string{"etc/npmrc": "//r/:_authToken=" + token + "\n", "pip.conf": "[global]\nindex-url = https://u:" + token + "@p/\n"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(prefix, rel)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(prefix, rel), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f.cfg.Sandbox.ReadOnly = []string{prefix}
		p := k.build(t, f, profiles.RoleReproducer, currentHost(t))
		out := k.run(t, p, 0, "sh", "-c", `cd `+f.checkout+` && git config --get-regexp 'http\..*'; cat .git/config `+prefix+`/etc/npmrc `+prefix+`/pip.conf;
			git status --short && git log --oneline && git remote -v && echo GIT-OK;
			grep -E ' /usr | /etc/alternatives ' /proc/self/mountinfo`)
		all := out.stdout + out.stderr
		for _, form := range []string{token, header} {
			if strings.Contains(all, form) {
				t.Errorf("a credential is readable inside (%q):\n%s", form, all)
			}
		}
		if !strings.Contains(out.stdout, "GIT-OK") || !strings.Contains(out.stdout, "https://github.com/o/r") {
			t.Errorf("git does not work in the checkout: exit %d\n%s", out.res.ExitCode, all)
		}
		checked := 0
		for _, l := range strings.Split(out.stdout, "\n") {
			if fs := strings.Fields(l); len(fs) > 5 && strings.HasPrefix(fs[4], "/") && strings.Contains(l, " - ") {
				checked++
				opts := "," + fs[5] + ","
				if !strings.Contains(opts, ",nosuid,") || !strings.Contains(opts, ",nodev,") {
					t.Errorf("%s is mounted %s: not nosuid,nodev", fs[4], fs[5])
				}
			}
		}
		if checked == 0 {
			t.Errorf("no system mount to check in mountinfo:\n%s", all)
		}
	})
}
