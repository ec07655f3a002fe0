//go:build linux

package kubecluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"
)

// The agent-sandbox controller (kubernetes-sigs/agent-sandbox: Sandbox,
// and its extensions SandboxTemplate, SandboxClaim, SandboxWarmPool) runs
// as a host process with the admin kubeconfig, like kube-router: its CRDs
// applied first, no RBAC needed (system:masters), leader election off,
// metrics off, its health probe on loopback.

// AgentSandboxVersion is the version scripts/agentsandbox.sh builds.
const AgentSandboxVersion = "v1.0.1"

// AgentSandboxScript builds and caches the controller and its CRDs.
const AgentSandboxScript = "scripts/agentsandbox.sh"

// AgentSandboxDir is where scripts/agentsandbox.sh put the controller
// and its CRDs: $TRIAGE_SANDBOX_AGENT_SANDBOX_DIR, else
// /var/cache/triage-sandbox/agent-sandbox/VERSION.
func AgentSandboxDir() string {
	if d := os.Getenv("TRIAGE_SANDBOX_AGENT_SANDBOX_DIR"); d != "" {
		return d
	}
	return filepath.Join("/var/cache/triage-sandbox/agent-sandbox", AgentSandboxVersion)
}

// AgentSandboxMissing says what the controller lacks, as one line with
// the fix ("" nothing).
func AgentSandboxMissing() string {
	bin := filepath.Join(AgentSandboxDir(), "agent-sandbox-controller")
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		return "no agent-sandbox controller: missing " + bin + " (build it with " + AgentSandboxScript + ", cached afterwards)"
	}
	if crds, _ := filepath.Glob(filepath.Join(AgentSandboxDir(), "crds", "*.yaml")); len(crds) == 0 {
		return "no agent-sandbox CRDs in " + filepath.Join(AgentSandboxDir(), "crds") + " (run " + AgentSandboxScript + ")"
	}
	return ""
}

// RequireAgentSandbox skips t, or fails it where the cluster is required
// (as Require), when the controller has not been built.
func RequireAgentSandbox(t testing.TB) {
	t.Helper()
	if msg := AgentSandboxMissing(); msg != "" {
		missingPart(t, msg)
	}
}

// agentSandboxProc names the controller's process among the cluster's.
const agentSandboxProc = "agent-sandbox-controller"

// StartAgentSandbox applies the agent-sandbox CRDs, waits until the API
// server serves them, starts the controller with its extensions (the
// template, claim and warm pool controllers) and returns once its health
// probe says it is ready. The cluster's Stop ends it.
func (c *Cluster) StartAgentSandbox() error {
	if msg := AgentSandboxMissing(); msg != "" {
		return fmt.Errorf("%s", msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	crds, err := filepath.Glob(filepath.Join(AgentSandboxDir(), "crds", "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(crds)
	var names []string
	for _, f := range crds {
		name, err := c.applyCRD(ctx, f)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	for _, n := range names {
		if err := c.awaitCRD(ctx, n); err != nil {
			return err
		}
	}
	probe := fmt.Sprintf("127.0.0.1:%d", freePort())
	p, err := c.runEnv(agentSandboxProc, []string{"KUBECONFIG=" + c.Kubeconfig},
		filepath.Join(AgentSandboxDir(), "agent-sandbox-controller"), "--extensions=true", "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address="+probe)
	if err != nil {
		return err
	}
	return p.waitUntil("did not say it was ready on "+probe+"/readyz", time.Minute, func() bool {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// applyCRD creates the CustomResourceDefinition in file f (one that is
// there already is kept) and returns its name.
func (c *Cluster) applyCRD(ctx context.Context, f string) (string, error) {
	text, err := os.ReadFile(f)
	if err != nil {
		return "", err
	}
	body, err := yaml.YAMLToJSON(text)
	if err != nil {
		return "", fmt.Errorf("%s: %w", f, err)
	}
	var meta struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &meta); err != nil || meta.Metadata.Name == "" {
		return "", fmt.Errorf("%s: not a CustomResourceDefinition with a name (%v)", f, err)
	}
	err = c.Client.Discovery().RESTClient().Post().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("applying %s: %w", f, err)
	}
	return meta.Metadata.Name, nil
}

// awaitCRD waits until CRD name is Established.
func (c *Cluster) awaitCRD(ctx context.Context, name string) error {
	for {
		raw, err := c.Client.Discovery().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", name).DoRaw(ctx)
		if err == nil {
			var crd struct {
				Status struct {
					Conditions []struct{ Type, Status string } `json:"conditions"`
				} `json:"status"`
			}
			if json.Unmarshal(raw, &crd) == nil {
				for _, cond := range crd.Status.Conditions {
					if cond.Type == "Established" && cond.Status == "True" {
						return nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the CRD %s was not established: %v", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
