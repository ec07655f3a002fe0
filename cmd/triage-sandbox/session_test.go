package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

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
