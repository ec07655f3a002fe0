package docker_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestSystemMountsNoSuidNoDev: the host toolchain's /usr (setuid su,
// mount, passwd) is nosuid, nodev and read-only inside.
func TestSystemMountsNoSuidNoDev(t *testing.T) {
	f := newFixture(t)
	p := build(t, f, profiles.RoleReproducer, currentHost(t))
	out := run(t, p, time.Minute, "sh", "-c", `grep -E ' /usr | /etc/alternatives ' /proc/self/mountinfo; touch /usr/triage-nosuid-probe 2>/dev/null && echo WROTE`)
	if out.res.ExitCode != 0 && out.res.ExitCode != 1 {
		t.Fatalf("exit %d: %s", out.res.ExitCode, out.stderr)
	}
	lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
	if len(lines) < 2 || strings.Contains(out.stdout, "WROTE") {
		t.Fatalf("mountinfo of the system mounts: %q", out.stdout)
	}
	for _, l := range lines {
		fields := strings.Fields(l)
		if len(fields) < 6 {
			t.Fatalf("mountinfo line %q", l)
		}
		opts := "," + fields[5] + ","
		for _, want := range []string{",ro,", ",nosuid,", ",nodev,"} {
			if !strings.Contains(opts, want) {
				t.Errorf("%s is mounted %s: not %s", fields[4], fields[5], strings.Trim(want, ","))
			}
		}
	}
}

// TestCheckoutGitCredentialsHidden: actions/checkout's persisted token in
// the checkout's .git/config is not readable inside in any form, and git
// still works there (status, log, diff, its remote).
func TestCheckoutGitCredentialsHidden(t *testing.T) {
	f := newFixture(t)
	const token = "ghs_GITCANARYGITCANARYGITCANARYGITCANARY0"
	header := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	testenv.PersistedCheckout(t, f.checkout, token)
	before, err := os.ReadFile(filepath.Join(f.checkout, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	p := build(t, f, profiles.RoleReproducer, currentHost(t))
	out := run(t, p, time.Minute, "sh", "-c", `cd `+f.checkout+` && git config --get http.https://github.com/.extraheader; cat .git/config; git config --list;
		git status --short && git log --oneline && git diff --stat && git remote -v && git rev-parse --abbrev-ref HEAD && echo GIT-OK`)
	all := out.stdout + out.stderr
	for _, form := range []string{token, header} {
		if strings.Contains(all, form) {
			t.Errorf("the token is readable inside (%q): %s", form, all)
		}
	}
	if !strings.Contains(out.stdout, "GIT-OK") || !strings.Contains(out.stdout, "https://github.com/o/r") {
		t.Errorf("git does not work in the checkout: exit %d\n%s\n%s", out.res.ExitCode, out.stdout, out.stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(f.checkout, ".git", "config")); string(after) != string(before) {
		t.Errorf("the host's .git/config changed:\n%s", after)
	}
}
