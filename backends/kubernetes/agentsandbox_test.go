//go:build linux

package kubernetes

import (
	"context"
	"encoding/json"
	"os/exec"

	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// agentSandboxCtl starts the agent-sandbox controller on the shared
// cluster once (its CRDs applied first); it fails, not skips, where the
// cluster is required and the controller was not built.
var agentSandboxCtl struct {
	once sync.Once
	err  error
}

func agentSandboxCluster(t *testing.T) {
	t.Helper()
	kubecluster.RequireAgentSandbox(t)
	c, _, _ := node(t)
	agentSandboxCtl.once.Do(func() { agentSandboxCtl.err = c.StartAgentSandbox() })
	if agentSandboxCtl.err != nil {
		t.Fatalf("starting the agent-sandbox controller: %v", agentSandboxCtl.err)
	}
}

const agentSandboxTOML = "kubernetes_api = \"agent-sandbox\"\n"

// asObjects is what the test sees of the agent-sandbox API in a namespace.
type asObjects struct {
	mu                       sync.Mutex
	templates, claims, pools map[string]bool
	sandboxOwners            map[string]string // sandbox -> its controller's kind/name
	podOwners                map[string]string // pod of ours -> its controller's kind/name
	claimSandbox             map[string]string // claim -> its sandbox
	claimPool                map[string]string // claim -> the warm pool it names
}

// watchAgentSandbox records, every 100 ms until stop, the templates,
// claims, pools and sandboxes in e's namespace, and who controls each
// pod of ours.
func watchAgentSandbox(t *testing.T, e *cliEnv) (seen *asObjects, stop func()) {
	seen = &asObjects{templates: map[string]bool{}, claims: map[string]bool{}, pools: map[string]bool{},
		sandboxOwners: map[string]string{}, podOwners: map[string]string{}, claimSandbox: map[string]string{}, claimPool: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	list := func(gv, res string) []map[string]any {
		raw, err := e.c.Client.Discovery().RESTClient().Get().AbsPath(asPath(gv, e.ns, res, "")).DoRaw(ctx)
		if err != nil {
			return nil
		}
		var l struct {
			Items []map[string]any `json:"items"`
		}
		_ = json.Unmarshal(raw, &l)
		return l.Items
	}
	name := func(o map[string]any) string { return o["metadata"].(map[string]any)["name"].(string) }
	controller := func(refs []metav1.OwnerReference) string {
		for _, r := range refs {
			if r.Controller != nil && *r.Controller {
				return r.Kind + "/" + r.Name
			}
		}
		return ""
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			tpls, claims, pools := list(extensionsGroupVersion, resTemplates), list(extensionsGroupVersion, resClaims), list(extensionsGroupVersion, resWarmPools)
			sbs := list(agentsGroupVersion, resSandboxes)
			pods, _ := e.c.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: ownerSelector})
			seen.mu.Lock()
			for _, o := range tpls {
				seen.templates[name(o)] = true
			}
			for _, o := range claims {
				seen.claims[name(o)] = true
				if sp, ok := o["spec"].(map[string]any); ok {
					if ref, ok := sp["warmPoolRef"].(map[string]any); ok && ref["name"] != nil {
						seen.claimPool[name(o)] = ref["name"].(string)
					}
				}
				if st, ok := o["status"].(map[string]any); ok {
					if sb, ok := st["sandbox"].(map[string]any); ok && sb["name"] != nil {
						seen.claimSandbox[name(o)] = sb["name"].(string)
					}
				}
			}
			for _, o := range pools {
				seen.pools[name(o)] = true
			}
			for _, o := range sbs {
				raw, _ := json.Marshal(o["metadata"])
				var m metav1.ObjectMeta
				_ = json.Unmarshal(raw, &m)
				seen.sandboxOwners[m.Name] = controller(m.OwnerReferences)
			}
			if pods != nil {
				for _, p := range pods.Items {
					seen.podOwners[p.Name] = controller(p.OwnerReferences)
				}
			}
			seen.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return seen, func() { cancel(); <-done }
}

// assertNoAgentSandboxLeft fails when a claim, a warm pool or a Sandbox
// is left in e's namespace (the templates are the policy's, shared by
// runs: the sweep removes one no pool names).
func assertNoAgentSandboxLeft(t *testing.T, e *cliEnv, d time.Duration) {
	t.Helper()
	var left []string
	if !testenv.Eventually(d, func() bool {
		left = nil
		for _, r := range [][2]string{{extensionsGroupVersion, resClaims}, {extensionsGroupVersion, resWarmPools}, {agentsGroupVersion, resSandboxes}} {
			raw, err := e.c.Client.Discovery().RESTClient().Get().AbsPath(asPath(r[0], e.ns, r[1], "")).DoRaw(context.Background())
			if err != nil {
				left = append(left, r[1]+": "+err.Error())
				continue
			}
			var l struct {
				Items []struct {
					Metadata struct{ Name string } `json:"metadata"`
				} `json:"items"`
			}
			_ = json.Unmarshal(raw, &l)
			for _, o := range l.Items {
				left = append(left, r[1]+"/"+o.Metadata.Name)
			}
		}
		return len(left) == 0
	}) {
		t.Errorf("left in %s: %v", e.ns, left)
	}
}

// TestSelftestThroughAgentSandbox: with kubernetes_api = "agent-sandbox",
// `selftest --backend kubernetes` passes both roles through the
// agent-sandbox controller: a SandboxTemplate per role's policy and a
// SandboxClaim per sandbox were made, and every pod of ours was the
// controller's (controlled by a Sandbox that its claim controls); after
// it, no claim, pool, Sandbox, pod or NetworkPolicy is left.
func TestSelftestThroughAgentSandbox(t *testing.T) {
	agentSandboxCluster(t)
	e := provenWorkspace(t, agentSandboxTOML)
	seen, stop := watchAgentSandbox(t, e)
	selftestOnNode(t, e)
	stop()
	if left := leftPods(e); len(left) > 0 {
		t.Errorf("pods left: %v", left)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	t.Logf("templates %d, claims %d, pools %d, pods %d", len(seen.templates), len(seen.claims), len(seen.pools), len(seen.podOwners))
	for _, role := range []string{"agent", "reproducer"} {
		if !slices.ContainsFunc(keys(seen.templates), func(n string) bool { return strings.HasPrefix(n, "triage-sandbox-"+role+"-") }) {
			t.Errorf("no SandboxTemplate of the %s role was made: %v", role, keys(seen.templates))
		}
	}
	if len(seen.claims) == 0 {
		t.Fatal("no SandboxClaim was made")
	}
	// What the controller made of the templates' networkPolicy (Managed,
	// no rules): a deny-all of both directions over the template's pods.
	for _, tpl := range keys(seen.templates) {
		np, err := e.c.Client.NetworkingV1().NetworkPolicies(e.ns).Get(context.Background(), tpl+"-network-policy", metav1.GetOptions{})
		if err != nil {
			t.Errorf("the controller's NetworkPolicy of %s: %v", tpl, err)
			continue
		}
		if len(np.Spec.Ingress)+len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 || len(np.Spec.PodSelector.MatchLabels) == 0 {
			t.Errorf("the controller's NetworkPolicy of %s is not a deny-all of its pods: %+v", tpl, np.Spec)
		}
	}
	for pod, owner := range seen.podOwners {
		if checkPod(pod) {
			continue // the network check's and the selftest's own target and control pods
		}
		sb, ok := strings.CutPrefix(owner, "Sandbox/")
		if !ok {
			t.Errorf("pod %s is controlled by %q, not by a Sandbox", pod, owner)
			continue
		}
		if o := seen.sandboxOwners[sb]; o != "" && !strings.HasPrefix(o, "SandboxClaim/") {
			t.Errorf("pod %s's Sandbox %s is controlled by %q, not by a claim", pod, sb, o)
		}
	}
	assertNoAgentSandboxLeft(t, e, time.Minute)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestPoolThroughAgentSandboxWarmPool: with pool = 1, the reproducer's
// keeper makes a SandboxWarmPool of 1 for the policy's template, and a
// pooled run claims the warm pod the controller started before the run
// (the claim's Sandbox is one seen, controlled by the pool, before the
// run began). `session end` removes the pool and its warm pod.
func TestPoolThroughAgentSandboxWarmPool(t *testing.T) {
	agentSandboxCluster(t)
	e := cliWorkspace(t, agentSandboxTOML, "pool = 1\n")
	run := func(args ...string) string {
		t.Helper()
		out, errOut, err := e.run(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, out, errOut)
		}
		return out
	}
	seen, stop := watchAgentSandbox(t, e)
	defer stop()
	// The first run starts the keeper, which makes the pool.
	run("run", "--role", "reproducer", "--", "sh", "-c", "echo ok")
	var warm []string
	if !testenv.Eventually(2*time.Minute, func() bool {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		warm = warm[:0]
		for sb, owner := range seen.sandboxOwners {
			if strings.HasPrefix(owner, "SandboxWarmPool/") {
				if _, ok := seen.podOwners[sb]; ok {
					warm = append(warm, sb)
				}
			}
		}
		return len(warm) > 0
	}) {
		t.Fatalf("no warm Sandbox with its pod: %v", seen.sandboxOwners)
	}
	t.Logf("warm before the run: %v", warm)
	if out := run("run", "--role", "reproducer", "--", "sh", "-c", "echo again"); !strings.HasSuffix(out, "again\n") {
		t.Errorf("pooled run printed %q", out)
	}
	seen.mu.Lock()
	// The claims that took a warm Sandbox named the keeper's pool (one
	// not the claim's own).
	var claimed []string
	for claim, sb := range seen.claimSandbox {
		if pool := seen.claimPool[claim]; pool != "" && pool != claim {
			claimed = append(claimed, sb)
		}
	}
	pools := keys(seen.pools)
	seen.mu.Unlock()
	if !slices.ContainsFunc(claimed, func(sb string) bool { return slices.Contains(warm, sb) }) {
		t.Errorf("no claim of the keeper's pool took a warm Sandbox of %v (their Sandboxes %v; all claims' pools %v)", warm, claimed, seen.claimPool)
	}
	if len(pools) == 0 {
		t.Errorf("no SandboxWarmPool was made")
	}
	run("session", "end", "pool:reproducer")
	e.awaitEmpty(t, 90*time.Second)
	assertNoAgentSandboxLeft(t, e, time.Minute)
}

// leftPods names the pods of ours in e's namespace, each with its
// controller and phase.
func leftPods(e *cliEnv) []string {
	pods, err := e.c.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: ownerSelector})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range pods.Items {
		owner := ""
		for _, r := range p.OwnerReferences {
			owner += r.Kind + "/" + r.Name
		}
		out = append(out, p.Name+" ("+owner+", "+string(p.Status.Phase)+")")
	}
	return out
}

// TestKill9ThroughAgentSandbox: a run through the controller, its CLI
// killed with SIGKILL while its command runs, leaves a claim, a Sandbox
// and a pod whose owner is gone; gc removes them all (and the run's own
// pool and deny-all), and a plain run before it leaves nothing.
func TestKill9ThroughAgentSandbox(t *testing.T) {
	agentSandboxCluster(t)
	e := cliWorkspace(t, agentSandboxTOML, "")
	if out, errOut, err := e.run("run", "--role", "agent", "--", "echo", "hi"); err != nil || out != "hi\n" {
		t.Fatalf("run: %v: %q %s", err, out, errOut)
	}
	if !testenv.Eventually(30*time.Second, func() bool { return len(leftPods(e)) == 0 }) {
		t.Fatalf("after a run: %v", leftPods(e))
	}
	assertNoAgentSandboxLeft(t, e, 10*time.Second)
	cmd := exec.Command(e.bin, "run", "--role", "agent", "--", "sleep", "300")
	cmd.Dir, cmd.Env = e.root, e.env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testenv.Eventually(2*time.Minute, func() bool {
		pods, err := e.c.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: ownerSelector})
		return err == nil && len(pods.Items) == 1 && pods.Items[0].Status.Phase == "Running"
	}) {
		_ = cmd.Process.Kill()
		t.Fatalf("no running pod of the run: %v", leftPods(e))
	}
	time.Sleep(2 * time.Second) // the command runs
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if out, errOut, err := e.run("gc", "--backend", "kubernetes"); err != nil {
		t.Fatalf("gc: %v\n%s%s", err, out, errOut)
	} else {
		t.Logf("gc: %s%s", out, errOut)
	}
	if !testenv.Eventually(time.Minute, func() bool { return len(leftPods(e)) == 0 }) {
		t.Errorf("after gc: %v", leftPods(e))
	}
	e.awaitEmpty(t, 10*time.Second)
	assertNoAgentSandboxLeft(t, e, 10*time.Second)
}

// checkPod says whether pod is one of the pods the network check
// (proof.go) or the selftest's cluster network checks (nettargets.go)
// start themselves: never through agent-sandbox, never a sandbox.
func checkPod(pod string) bool {
	for _, kind := range []string{"proof-listener-", "proof-control-", "proof-prober-", "selftest-listener-", "selftest-control-"} {
		if strings.Contains(pod, "triage-sandbox-"+kind) {
			return true
		}
	}
	return false
}

// TestSelftestPoolThroughAgentSandbox: `selftest --role reproducer --warm
// pool` passes through the agent-sandbox controller with own_loopback
// proven: the reproducer's sandboxes are claims of the keeper's
// SandboxWarmPool (a claim naming a pool other than its own), and nothing
// of the API is left after it.
func TestSelftestPoolThroughAgentSandbox(t *testing.T) {
	agentSandboxCluster(t)
	e := provenWorkspace(t, agentSandboxTOML)
	seen, stop := watchAgentSandbox(t, e)
	judgedSelftest(t, e, "reproducer --warm pool", []string{"--role", "reproducer", "--warm", "pool"})
	stop()
	seen.mu.Lock()
	var fromPool []string
	for claim, pool := range seen.claimPool {
		if pool != "" && pool != claim {
			fromPool = append(fromPool, claim+" of "+pool)
		}
	}
	pools := keys(seen.pools)
	seen.mu.Unlock()
	t.Logf("claims of a kept pool: %d; pools %v", len(fromPool), pools)
	if len(fromPool) == 0 {
		t.Errorf("no claim named a SandboxWarmPool other than its own: the pool was not the controller's (claims' pools %v)", seen.claimPool)
	}
	e.awaitEmpty(t, 90*time.Second)
	assertNoAgentSandboxLeft(t, e, time.Minute)
}
