//go:build linux

package integration_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/hostprep"
	"github.com/triage-sandbox/triage-sandbox/internal/egresstest"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/runproxy"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// egressRig is a loopback canary and the hook that lets the proxy reach
// it (and nothing else) under canaryName.
type egressRig struct {
	port             uint16
	allowed, refused string
	hook             egresstest.Hook
}

func newEgressRig(t *testing.T) egressRig {
	t.Helper()
	canary := canaryServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "canary-ok")
	}))
	t.Cleanup(canary.Close)
	addr := netip.MustParseAddrPort(strings.TrimPrefix(canary.URL, "http://"))
	hook := onlyUpstream(t, canaryName, addr)
	return egressRig{port: addr.Port(), hook: hook,
		allowed: fmt.Sprintf("http://%s:%d/", canaryName, addr.Port()),
		refused: fmt.Sprintf("http://%s:%d/", refusedName, addr.Port())}
}

// keepInProcess runs p's keeper in this process, with ctx (the rig's
// hook: the keeper's proxy reads it, and no config or flag can carry it
// to a keeper process), until stop or the test's end.
func keepInProcess(t *testing.T, ctx context.Context, k *kit, dir string, p *policy.Policy) (stop func()) {
	t.Helper()
	// As a run does before it spawns a keeper: the writable paths exist.
	if err := hostprep.Writable(p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- warm.Keep(ctx, warm.KeeperOptions{Dir: dir, Policy: p, Backend: k.b, Log: testLog{t}})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the keeper: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	for recs, _ := warm.List(dir); len(recs) == 0; recs, _ = warm.List(dir) {
		select {
		case err := <-done:
			t.Fatalf("the keeper ended while starting: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return stop
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) { l.t.Logf("keeper: %s", b); return len(b), nil }

// warmFetch runs the fetch script for urls through wb, as `run` does
// (gate, output pipeline, audit record).
func warmFetch(t *testing.T, wb backends.Backend, p *policy.Policy, rig egressRig, urls ...string) (sandbox.Outcome, string, error) {
	var out testenv.Buffer
	argv := append([]string{"python3", "-c", fetchThroughProxy, strconv.Itoa(int(rig.port))}, urls...)
	res, err := sandbox.Run(context.Background(), wb, sandbox.Request{
		Policy: p, Command: backends.Command{Argv: argv},
		Streams:  backends.Streams{Stdout: &out, Stderr: &out},
		Redactor: output.NewRedactor(nil, output.DefaultRules()),
	})
	return res, out.String(), err
}

// checkFetch: the command reached the canary or was refused, as wanted,
// and the outcome holds exactly that one decision.
func checkFetch(t *testing.T, rig egressRig, out sandbox.Outcome, text string, err error, wantAllowed bool) {
	t.Helper()
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d: %s", err, out.ExitCode, text)
	}
	if !strings.Contains(text, "direct refused") {
		t.Errorf("a direct connection on the loopback was not refused:\n%s", text)
	}
	host, line := refusedName, rig.refused+" 403 refused"
	if wantAllowed {
		host, line = canaryName, rig.allowed+" 200 canary-ok"
	}
	if !strings.Contains(text, line) {
		t.Errorf("want %q in:\n%s", line, text)
	}
	if len(out.Network) != 1 || out.Network[0].Host != host || out.Network[0].Allowed != wantAllowed {
		t.Errorf("decisions %+v: want this command's one decision, %s allowed %v", out.Network, host, wantAllowed)
	}
}

// ownSocketDirs are the proxy socket directories of this process.
func ownSocketDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(runproxy.Base(), fmt.Sprintf("%s%d-*", runproxy.Prefix, os.Getpid())))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestSessionServesTheAllowList (issue 36): a session with an allow-list
// on docker, oci and local: its keeper holds the proxy; each command's
// outcome (run --json's network) and audit record hold that command's
// decisions only: an allowed fetch, then a refused one with its hint; the
// session's end leaves no socket directory.
func TestSessionServesTheAllowList(t *testing.T) {
	rig := newEgressRig(t)
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		f.cfg = withNetworkFor(t, f, "agent", fmt.Sprintf(`["%s:%d"]`, canaryName, rig.port))
		p := k.build(t, f, "agent", currentHost(t))
		p.Warm = policy.Warm{Session: "net", Idle: time.Minute}
		wb := k.warm(t)
		stop := keepInProcess(t, egresstest.With(context.Background(), rig.hook), k, wb.Dir, p)
		first, text, err := warmFetch(t, wb, p, rig, rig.allowed)
		checkFetch(t, rig, first, text, err, true)
		if rec := lastAudit(t, p.AuditLog); !strings.Contains(rec, canaryName) {
			t.Errorf("the first command's audit record has not its decision: %s", rec)
		}
		second, text, err := warmFetch(t, wb, p, rig, rig.refused)
		checkFetch(t, rig, second, text, err, false)
		if second.Sandbox != first.Sandbox {
			t.Fatalf("the second command ran in %s, not in the session's %s", second.Sandbox, first.Sandbox)
		}
		if rec := lastAudit(t, p.AuditLog); !strings.Contains(rec, refusedName) || strings.Contains(rec, canaryName) {
			t.Errorf("the second command's audit record must hold its own decision only: %s", rec)
		}
		hint := strings.Join(second.Hints, "\n")
		if !strings.Contains(hint, refusedName) || !strings.Contains(hint, "[sandbox.agent] network") {
			t.Errorf("no hint names the refused host and the key: %q", second.Hints)
		}
		if len(ownSocketDirs(t)) != 1 {
			t.Errorf("the session's socket directory: %v, want one", ownSocketDirs(t))
		}
		stop()
		k.waitNoLeftovers(t, first.Sandbox)
		if left := ownSocketDirs(t); len(left) != 0 {
			t.Errorf("socket directories outlived the session: %v", left)
		}
	})
}

// TestPoolServesTheAllowList (issue 36): two runs at once take a pooled
// sandbox each, each with its own proxy: one's decisions never show in
// the other's outcome.
func TestPoolServesTheAllowList(t *testing.T) {
	rig := newEgressRig(t)
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		f.cfg = withNetwork(t, f, fmt.Sprintf(`["%s:%d"]`, canaryName, rig.port))
		p := k.build(t, f, "reproducer", currentHost(t))
		p.Warm = policy.Warm{Pool: 2, Idle: time.Minute}
		wb := k.warm(t)
		stop := keepInProcess(t, egresstest.With(context.Background(), rig.hook), k, wb.Dir, p)
		type run struct {
			out  sandbox.Outcome
			text string
			err  error
		}
		var runs [2]run
		var wg sync.WaitGroup
		for i, url := range []string{rig.allowed, rig.refused} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runs[i].out, runs[i].text, runs[i].err = warmFetch(t, wb, p, rig, url)
			}()
		}
		wg.Wait()
		checkFetch(t, rig, runs[0].out, runs[0].text, runs[0].err, true)
		checkFetch(t, rig, runs[1].out, runs[1].text, runs[1].err, false)
		if runs[0].out.Sandbox == runs[1].out.Sandbox {
			t.Fatalf("two runs shared the pooled sandbox %s", runs[0].out.Sandbox)
		}
		stop()
		for _, r := range runs {
			k.waitNoLeftovers(t, r.out.Sandbox)
		}
		if left := ownSocketDirs(t); len(left) != 0 {
			t.Errorf("socket directories outlived the pool: %v", left)
		}
	})
}
