//go:build linux

package kubernetes

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestSweep: gc removes the pods and NetworkPolicies of a dead owner on
// this host and of an expired sandbox anywhere, and keeps a live owner's
// and another host's unexpired ones.
func TestSweep(t *testing.T) {
	c := cluster(t)
	ns := restrictedNamespace(t, c)
	b := backendFor(t, c, ns)
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadPID, deadStart := dead.Process.Pid, ownership.ProcessStart(dead.Process.Pid)
	_ = dead.Wait()
	me := os.Getpid()
	future, past := time.Now().Add(time.Hour), time.Now().Add(-time.Minute)
	cases := []struct {
		name      string
		pid       int
		start     string
		host      string
		expires   time.Time
		wantSwept bool
	}{
		{"dead-owner", deadPID, deadStart, b.host, future, true},
		{"live-owner", me, ownership.ProcessStart(me), b.host, future, false},
		{"expired", me, ownership.ProcessStart(me), "elsewhere", past, true},
		{"other-host", 1, "1", "elsewhere", future, false},
	}
	p := rolePolicy(t, profiles.RoleReproducer, nil)
	var made []*Rendered
	for _, k := range cases {
		r, err := Render(p, RunInfo{Name: "sweep-" + k.name, Namespace: ns, ParentPID: k.pid, ParentStart: k.start, Host: k.host, ExpiresAt: k.expires})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.create(ctx, r); err != nil {
			t.Fatal(err)
		}
		made = append(made, r)
	}
	removed, err := b.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range cases {
		for _, kind := range []string{"pod/", "networkpolicy/"} {
			got := slices.Contains(removed, kind+ns+"/sweep-"+k.name)
			if got != k.wantSwept {
				t.Errorf("%s%s: swept %v, want %v", kind, k.name, got, k.wantSwept)
			}
		}
	}
	for _, r := range made {
		if err := b.remove(ctx, r); err != nil {
			t.Error(err)
		}
	}
}
