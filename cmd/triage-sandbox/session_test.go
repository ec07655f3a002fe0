package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// TestPrintRecords: a pool has the name `session end` takes, and IDLE is
// the idle time, beside the warm_idle setting.
func TestPrintRecords(t *testing.T) {
	recs := []warm.Record{
		{Kind: warm.KindSession, Name: "s1", Role: "agent", Backend: "docker", Policy: "sha256:abc", Since: time.Now(),
			Idle: "42s", WarmIdle: "10m0s", Workspace: "/w"},
		{Kind: warm.KindPool, Name: "pool:reproducer", Role: "reproducer", Backend: "oci", Policy: "sha256:def", Since: time.Now(),
			Idle: "3s", WarmIdle: "10m0s", Workspace: "/w\x1b[2J", Pool: 3},
	}
	var b bytes.Buffer
	printRecords(&b, recs)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%q", b.String())
	}
	for i, want := range [][]string{
		{"NAME", "SIZE", "IDLE", "WARM_IDLE"},
		{"session", "s1", " 1 ", "42s", "10m0s"},
		{"pool", "pool:reproducer", " 3 ", "3s", "10m0s"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("a workspace's escape reached the terminal: %q", b.String())
	}
}

// TestSmallCLIItems: a flag's error is not shown as the config's;
// render and policy default to the agent role as run and check do;
// doctor names the config it read, and a broken one as broken.
func TestSmallCLIItems(t *testing.T) {
	root := workspace(t, "[sandbox]\nbackend = \"local\"\n")
	r := runCLI(t, root, nil, "run", "--role", "reproducer", "--session", "s1", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "--session s1: sessions are for the agent role") || strings.Contains(r.stderr, "triage.toml") {
		t.Errorf("a flag's error: exit %d %q", r.code, r.stderr)
	}
	r = runCLI(t, root, nil, "policy")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "agent sandbox:") {
		t.Errorf("policy without --role: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, root, nil, "render")
	if r.code != 0 || !strings.Contains(r.stdout, "{") {
		t.Errorf("render without --role: exit %d %q", r.code, r.stderr)
	}
	r = runCLI(t, root, nil, "doctor")
	if !strings.Contains(r.stdout, "ok    config") || !strings.Contains(r.stdout, root+"/triage.toml") {
		t.Errorf("doctor does not name its config:\n%s", r.stdout)
	}
	broken := workspace(t, "[sandbox]\nmemory = 2\n")
	r = runCLI(t, broken, nil, "doctor")
	if r.code == 0 || !strings.Contains(r.stdout, "FAIL  config                       broken: "+broken+"/triage.toml:2: sandbox.memory") ||
		strings.Contains(r.stdout, "not configured") {
		t.Errorf("doctor with a broken config: exit %d\n%s", r.code, r.stdout)
	}
}

// TestHomeIsPrivateOnContainerBackends: HOME is 0700 on docker and oci as
// on local (runc gives a tmpfs its mount point's mode; the holder sets
// the policy's), TMPDIR 1777.
func TestHomeIsPrivateOnContainerBackends(t *testing.T) {
	for _, backend := range []string{"docker", "oci"} {
		t.Run(backend, func(t *testing.T) {
			testenv.RequireDocker(t) // oci unpacks the same image from the daemon
			if backend == "oci" {
				testenv.RequireRoot(t, "the oci backend runs runc as root")
			}
			root := workspace(t, "")
			r := runCLI(t, root, nil, "run", "--backend", backend, "--", "sh", "-c", `stat -c %a "$HOME" "$TMPDIR"`)
			if r.code != 0 || r.stdout != "700\n1777\n" {
				t.Fatalf("exit %d, modes %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}
