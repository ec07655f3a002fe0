//go:build linux

package kubernetes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestSelftestOnNode: `triage-sandbox-kube selftest --backend kubernetes`
// on the local node (containerd, runc, the kubelet), the workspace given
// to each pod by copy, with the node's policy controller stopped and
// own_loopback accepted (the user's honest way past the start check that
// refuses such a cluster; the refusal: TestSelftestUnenforcedRefused):
// every check of both roles passes, not applicable only where the backend
// declares a capability missing,
// except the cluster network checks NET-40 … NET-42, which connect to a
// pod, to the API server's endpoint and (over UDP) to the listener pod
// standing in for a DNS server (the test cluster has none) from the
// sandbox's pod and FAIL,
// as they must where nothing enforces the deny-all policy. Its pods and
// NetworkPolicies are all gone afterwards (restrictedNamespace's cleanup).
func TestSelftestOnNode(t *testing.T) {
	e := cliWorkspace(t, "", "")
	stopPolicy(t)
	selftestOnNode(t, e, "NET-40", "NET-41", "NET-42")
}

// TestSelftestOnNodeGVisor: the same with runtime = "gvisor", the node's
// RuntimeClass for the runsc scripts/gvisor.sh builds (cached), driven by
// containerd's runc shim. The backend reads the class's handler (runsc)
// and applies gVisor's traits: without its process limit the agent's
// headroom check (200 processes, each gVisor host memory, in 1 GiB) ended
// the whole sandbox. It fails, not skips, where the cluster is required
// and the class cannot be made (kubecluster.RequireGVisor says why).
func TestSelftestOnNodeGVisor(t *testing.T) {
	kubecluster.RequireGVisor(t)
	_, n, _ := node(t)
	if !slices.Contains(n.RuntimeClasses, kubecluster.GVisorClass) {
		t.Fatalf("the test node offers no %s RuntimeClass (%v) though %s is there", kubecluster.GVisorClass, n.RuntimeClasses, kubecluster.GVisorDir())
	}
	e := cliWorkspace(t, "runtime = \""+kubecluster.GVisorClass+"\"\n", "")
	// The cluster network checks pass only where the policy is enforced.
	c, n, _ := node(t)
	if err := c.StartPolicy(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopPolicy(n) })
	selftestOnNode(t, e)
}

// selftestOnNode runs the selftest of each role in e and judges it: one
// role at a time, so one role's pods fit the node's two CPUs at once (a
// pod waiting past the backend's start bound would be inconclusive).
//
// wantFail are the checks that must FAIL in every role (and then the
// selftest's exit fails too).
func selftestOnNode(t *testing.T, e *cliEnv, wantFail ...string) {
	for _, role := range profiles.Roles() {
		judgedSelftest(t, e, string(role), []string{"--role", string(role)}, wantFail...)
	}
	// Within three minutes: the claims are deleted at once, and their
	// Sandboxes and pods go with them through the cluster's garbage
	// collector, which on this loaded 2-core node once took more than
	// one (a Pending pod of the agent-sandbox controller's, CI15).
	e.awaitEmpty(t, 3*time.Minute)
}

// judgedSelftest runs selftest --json with args in e, judges its report
// (judgeSelftest) and returns it. Every kubernetes selftest in these tests
// runs through it, so each gets the same one rule for a second run:
//
// A report whose only bad results but wantFail's are inconclusive runs
// once more, and that second run is the one judged: on this shared 2-core
// node the runtime's own exec (runc init, uid 0, oom_score_adj 0) was once
// OOM-killed in the memory check's exhausted cgroup before the probe could
// report (RES-02, exit 137, seen once in four CI runs; then once more with
// wantFail set, and once more in the pooled selftest, CI of stop 49, each
// time in a test that had no second run). An inconclusive check twice, or
// a single FAIL not in wantFail, still fails the test.
func judgedSelftest(t *testing.T, e *cliEnv, what string, args []string, wantFail ...string) string {
	t.Helper()
	for try := 1; ; try++ {
		start := time.Now()
		stdout, stderr, runErr := e.run(append([]string{"selftest", "--json"}, args...)...)
		t.Logf("%s: selftest in %s (try %d)", what, time.Since(start).Round(time.Second), try)
		if try == 1 && onlyInconclusive(stdout, wantFail...) {
			t.Logf("%s: only inconclusive results, once more:\n%s", what, stdout)
			continue
		}
		judgeSelftest(t, stdout, stderr, runErr, wantFail...)
		return stdout
	}
}

// onlyInconclusive reports whether a selftest --json report holds at least
// one inconclusive check and no failed one but those in expectedFail.
func onlyInconclusive(stdout string, expectedFail ...string) bool {
	var rep struct {
		Roles []struct {
			Checks []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"checks"`
		} `json:"roles"`
	}
	if json.Unmarshal([]byte(stdout), &rep) != nil {
		return false
	}
	inconclusive := false
	for _, r := range rep.Roles {
		for _, ch := range r.Checks {
			switch ch.Status {
			case "INCONCLUSIVE":
				inconclusive = true
			case "FAIL":
				if !slices.Contains(expectedFail, ch.ID) {
					return false
				}
			}
		}
	}
	return inconclusive
}

// judgeSelftest fails on any check neither ok nor not applicable for a
// capability the backend declares missing, but for wantFail, which must
// be there and FAIL; the cluster network checks (NET-40 … NET-42) must be
// there in every role.
func judgeSelftest(t *testing.T, stdout, stderr string, runErr error, wantFail ...string) {
	t.Helper()
	var rep struct {
		Roles []struct {
			Role     string        `json:"role"`
			Error    string        `json:"error"`
			Duration time.Duration `json:"duration_ns"`
			Checks   []struct {
				ID, Status, Evidence string
				OK                   bool
			} `json:"checks"`
		} `json:"roles"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Roles) != 1 {
		t.Fatalf("selftest: %v; report %v: %s\nstderr: %s", runErr, err, stdout, stderr)
	}
	// PRIV-05 judges the host system directories a sandbox reads; a pod
	// reads none (the image's toolchain), which its control finds.
	declared := map[string]string{"NET-11": "own_loopback", "NET-12": "own_loopback", "RES-01": "pids_limit",
		"NET-20": "egress_proxy", "NET-21": "egress_proxy", "NET-22": "egress_proxy", "NET-23": "egress_proxy",
		"NET-24": "egress_proxy", "NET-25": "egress_proxy", "NET-26": "egress_proxy", "NET-27": "egress_proxy", "NET-28": "egress_proxy",
		"PRIV-05": "no host system directory is mounted"}
	for _, r := range rep.Roles {
		t.Logf("%s: %s, %d checks", r.Role, r.Duration.Round(time.Second), len(r.Checks))
		if r.Error != "" {
			t.Errorf("%s: %s", r.Role, r.Error)
		}
		seen := map[string]string{}
		for _, ch := range r.Checks {
			seen[ch.ID] = ch.Status
			if strings.HasPrefix(ch.ID, "NET-4") {
				t.Logf("%s %s %s: %s", r.Role, ch.ID, ch.Status, ch.Evidence)
			}
			switch {
			case slices.Contains(wantFail, ch.ID):
				if ch.Status != "FAIL" {
					t.Errorf("%s %s %s, want FAIL: %s", r.Role, ch.ID, ch.Status, ch.Evidence)
				}
			case ch.Status == "n/a":
				if cap, ok := declared[ch.ID]; !ok || !strings.Contains(ch.Evidence, cap) {
					t.Errorf("%s %s not applicable, not for a declared missing capability: %s", r.Role, ch.ID, ch.Evidence)
				}
			case !ch.OK:
				t.Errorf("%s %s %s: %s", r.Role, ch.ID, ch.Status, ch.Evidence)
			}
		}
		for _, id := range []string{"NET-40", "NET-41", "NET-42"} {
			if _, ok := seen[id]; !ok {
				t.Errorf("%s: no %s in the report: the cluster network checks did not run", r.Role, id)
			}
		}
	}
	switch {
	case len(wantFail) > 0 && runErr == nil:
		t.Errorf("the selftest passed with %v failing", wantFail)
	case len(wantFail) == 0 && runErr != nil:
		t.Errorf("selftest exit: %v\n%s", runErr, stderr)
	}
}

// stopPolicy stops the shared node's policy controller (a test before
// may have left it running) and checks nothing of its is left.
func stopPolicy(t *testing.T) {
	t.Helper()
	c, n, _ := node(t)
	if err := c.StopPolicy(n); err != nil {
		t.Fatal(err)
	}
}

// TestGVisorMemoryLimitReported: under gVisor the memory limit may end the
// whole pod (gVisor's kernel is charged in its cgroup) or only the
// command (a refused allocation); either way the run says so, never the
// runtime's lost exec (128), nor a sandbox that did not start (125): the
// whole pod's end is an OOM kill (137, oom_killed), read from the
// holder's OOMKilled status.
func TestGVisorMemoryLimitReported(t *testing.T) {
	kubecluster.RequireGVisor(t)
	e := cliWorkspace(t, "runtime = \""+kubecluster.GVisorClass+"\"\nmemory = \"512m\"\n", "")
	stdout, stderr, _ := e.run("run", "--json", "--", "python3", "-c", "x = bytearray(900 << 20); print('past the limit')")
	var res struct {
		ExitCode  int  `json:"exit_code"`
		OOMKilled bool `json:"oom_killed"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("run: %v: %s\nstderr: %s", err, stdout, stderr)
	}
	t.Logf("exit %d, oom_killed %v", res.ExitCode, res.OOMKilled)
	switch {
	case strings.Contains(stdout, "past the limit") || res.ExitCode == 0:
		t.Fatalf("the command got past the memory limit: %s", stdout)
	case res.ExitCode == 137 && res.OOMKilled:
		// The whole pod, or the command, ended by the memory limit.
	case res.ExitCode == 1 && strings.Contains(stdout, "MemoryError"):
		// gVisor's kernel refused the allocation.
	default:
		t.Errorf("exit %d, oom_killed %v: not the memory limit's end (128: the runtime's lost exec)\n%s\nstderr: %s", res.ExitCode, res.OOMKilled, stdout, stderr)
	}
	e.awaitEmpty(t, time.Minute)
}

// TestSelftestOnNodeProven: with the node's policy controller running,
// the selftest passes both roles with own_loopback proven at start (the
// network check, proof.go), not accepted: the config accepts pids_limit
// alone, and the loopback checks (NET-11, NET-12) run instead of being
// not applicable.
func TestSelftestOnNodeProven(t *testing.T) {
	selftestOnNode(t, provenWorkspace(t, ""))
}

// provenWorkspace is cliWorkspace(t, extra, "") with own_loopback no
// longer accepted (proven at start instead) and the node's policy
// controller running until t ends.
func provenWorkspace(t *testing.T, extra string) *cliEnv {
	t.Helper()
	kubecluster.RequirePolicy(t)
	e := cliWorkspace(t, extra, "")
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
	c, n, _ := node(t)
	if err := c.StartPolicy(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopPolicy(n) })
	return e
}
