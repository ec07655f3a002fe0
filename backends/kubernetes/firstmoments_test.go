//go:build linux

package kubernetes

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestFirstMoments: a loopback-only sandbox's first command, run the
// moment Start returns, reaches none of the API server's endpoints, which
// a pod no policy selects reaches (the proof's control, and the check
// below with the controller stopped): Start waited until the pod's own
// connects got no answer (firstmoments.go). With the proof cached and the
// controller then stopped, the pod is never blocked, and Start refuses
// with one line and leaves nothing.
func TestFirstMoments(t *testing.T) {
	kubecluster.RequirePolicy(t)
	c, n, image := node(t)
	ns := restrictedNamespace(t, c)
	ctx := context.Background()
	unproven := func() *policy.Policy {
		p := rolePolicy(t, profiles.RoleReproducer, nil)
		p.Base.Image, p.Namespace, p.Workdir = image, ns, "/"
		p.Accepted = append(p.Accepted, profiles.CapPidsLimit)
		if _, err := policy.Enforce(p, Name, Capabilities()); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := backendFor(t, c, ns)
	b.NodeName = n.Name
	b.Notices = &bytes.Buffer{}
	api, err := b.apiEndpoints(ctx)
	if err != nil || len(api) == 0 {
		t.Fatalf("the API server's endpoints: %v %v", api, err)
	}
	firstArgv, err := protocol.Argv(launch.InitPath, protocol.EntryProbe, protocol.Probe{Tag: "first", Plan: tokenPlan(api)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartPolicy(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopPolicy(n) })
	// first starts a sandbox, runs the probe as its first command and
	// says whether it reached an endpoint.
	first := func(i int) bool {
		t.Helper()
		start := time.Now()
		sb, err := b.Start(ctx, unproven(), backends.StartOptions{})
		if err != nil {
			t.Fatalf("start %d with the policy controller running: %v", i, err)
		}
		defer func() {
			if err := sb.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}()
		took := time.Since(start)
		var out, errOut bytes.Buffer
		res, err := sb.Exec(ctx, backends.Command{Argv: firstArgv}, backends.Streams{Stdout: &out, Stderr: &errOut})
		if err != nil {
			t.Fatalf("the first command: %v", err)
		}
		obs, perr := protocol.ParseProbeObservations(&out)
		if perr != nil {
			t.Fatalf("the first command (exit %d): %v: %s", res.ExitCode, perr, errOut.String())
		}
		reached := false
		for _, tg := range api {
			o, ok := obs[tg.ID]
			t.Logf("start %d in %s; first command to %s: %+v", i, took.Round(time.Millisecond), tg.What, o)
			if !ok {
				t.Errorf("the first command said nothing of %s", tg.What)
			}
			reached = reached || strings.Contains(o.Values["read"], tg.Expect)
		}
		return reached
	}
	for i := range 3 {
		if first(i) {
			t.Errorf("start %d: the first command of a loopback-only sandbox reached the API server", i)
		}
	}
	// The window the wait closes: without it, how many first commands
	// reach (logged: it depends on the controller's timing here).
	b.skipFirstMoments = true
	open := 0
	for i := range 3 {
		if first(10 + i) {
			open++
		}
	}
	t.Logf("without the first moments' wait, %d of 3 first commands reached the API server", open)
	b.skipFirstMoments = false

	// The proof is cached (ten minutes); the controller stops: the new
	// pod stays reachable, and Start refuses.
	if err := c.StopPolicy(n); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sb, err := b.Start(ctx, unproven(), backends.StartOptions{})
	t.Logf("with the controller stopped after the proof, in %s: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil {
		_ = sb.Close(ctx)
		t.Fatal("Start handed out a loopback-only sandbox whose pod reaches the API server")
	}
	msg := err.Error()
	for _, want := range []string{"still reached the API server's endpoint", "did not apply", `accept_weaker = ["own_loopback"]`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("the refusal is more than one line: %q", msg)
	}
	if left := ours(t, c, ns); len(left) != 0 {
		t.Errorf("the refused start left %v", left)
	}
}

// TestSelftestUnenforcedRefused: with the node's policy controller
// stopped and own_loopback not accepted, the start check every sandbox of
// `selftest` and `run` goes through refuses, in one line naming what was
// reached and the way out (TestSelftestOnNode then accepts own_loopback:
// the cluster network checks fail).
func TestSelftestUnenforcedRefused(t *testing.T) {
	e := cliWorkspace(t, "", "")
	stopPolicy(t)
	path := filepath.Join(e.root, "triage.toml")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	proven := strings.Replace(string(text), `accept_weaker = ["own_loopback", "pids_limit"]`, `accept_weaker = ["pids_limit"]`, 1)
	if proven == string(text) {
		t.Fatal("the workspace's triage.toml accepts own_loopback no longer where this test expects it")
	}
	if err := os.WriteFile(path, []byte(proven), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, runErr := e.run("run", "--", "true")
	t.Logf("run: %v\nstdout: %s\nstderr: %s", runErr, stdout, stderr)
	if runErr == nil {
		t.Fatal("a loopback-only run started on a cluster that does not enforce NetworkPolicy")
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var refusal []string
	for _, l := range lines {
		if strings.Contains(l, "does not enforce NetworkPolicy") {
			refusal = append(refusal, l)
		}
	}
	if len(refusal) != 1 || !strings.Contains(refusal[0], `accept_weaker = ["own_loopback"]`) {
		t.Errorf("want one line refusing, naming the way out; stderr:\n%s", stderr)
	}
	e.awaitEmpty(t, time.Minute)
}
