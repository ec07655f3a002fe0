//go:build linux

package integration_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestNoCredentialInWhatTheSandboxReads, on every backend: the checkout's
// persisted job token (an actions/checkout extraheader) and the tool
// configs of a read-only tool prefix (npm's globalconfig, pip's site
// config) are unreadable in any form; git still works in the checkout;
// the host system directories are nosuid,nodev. Under gVisor too, whose
// runsc drops the spec's maskedPaths (the masks are mounts there) and
// whose mountinfo never shows nodev: there a live host device node in a
// read-only bind must not open (it did not on runc either: nodev).
func TestNoCredentialInWhatTheSandboxReads(t *testing.T) {
	const token = "ghs_CREDSCANARYCREDSCANARYCREDSCANARY0000"
	header := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	forEachBackendAnd(t, []string{gvisor, dockerGVisor}, func(t *testing.T, k *kit) {
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
		userSpaceKernel := runtimes.Of(k.runtime).UserSpaceKernel
		device, why := liveDeviceNode(t, prefix)
		if device == "" {
			if userSpaceKernel {
				// Nothing else shows nodev there.
				t.Fatalf("no device node to try: %s", why)
			}
			t.Logf("no device node to try (mountinfo's nodev is checked instead): %s", why)
			device = filepath.Join(prefix, "kmsg")
		}
		p := k.build(t, f, profiles.RoleReproducer, currentHost(t))
		out := k.run(t, p, 0, "sh", "-c", `cd `+f.checkout+` && git config --get-regexp 'http\..*'; cat .git/config `+prefix+`/etc/npmrc `+prefix+`/pip.conf;
			git status --short && git log --oneline && git remote -v && echo GIT-OK;
			python3 -c 'import os,sys
try: os.open(sys.argv[1], os.O_WRONLY|os.O_NOCTTY); print("DEVICE-OPENED")
except OSError as e: print("DEVICE-REFUSED", e.errno)' `+device+`;
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
				// gVisor's mountinfo never shows nodev; the device node
				// below stands in for it there.
				if !strings.Contains(opts, ",nosuid,") || !userSpaceKernel && !strings.Contains(opts, ",nodev,") {
					t.Errorf("%s is mounted %s: not nosuid,nodev", fs[4], fs[5])
				}
			}
		}
		if checked == 0 {
			t.Errorf("no system mount to check in mountinfo:\n%s", all)
		}
		if i := strings.Index(out.stdout, "DEVICE"); i >= 0 {
			t.Logf("%s", strings.SplitN(out.stdout[i:], "\n", 2)[0])
		}
		if why == "" && !strings.Contains(out.stdout, "DEVICE-REFUSED") {
			t.Errorf("the host device node %s is not refused inside:\n%s", device, all)
		}
	})
}

// liveDeviceNode makes a host character device node in dir that anyone
// may open for writing (1:11, the kernel log: the open checks no
// privilege and writes nothing) and proves it opens here, outside; "" and
// why where it cannot.
func liveDeviceNode(t *testing.T, dir string) (string, string) {
	t.Helper()
	path := filepath.Join(dir, "kmsg")
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 11))); err != nil {
		return "", "making one needs root: " + err.Error()
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(path)
		return "", "it does not open outside either (a nodev temp dir?), so a refusal inside would prove nothing: " + err.Error()
	}
	_ = unix.Close(fd)
	return path, ""
}
