//go:build linux

package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestSuite runs backendtest.Suite, the lifecycle every backend keeps, on
// the test cluster's node: a reproducer's pod in a restricted namespace,
// its writable directory staged in over the attach stream and back over
// the exec stream.
func TestSuite(t *testing.T) {
	c, n, image := node(t)
	ns := restrictedNamespace(t, c)
	b := backendFor(t, c, ns)
	b.NodeName = n.Name
	backendtest.Suite(t, func(testing.TB) backendtest.Harness {
		return backendtest.Harness{
			Backend: b,
			Policy: func(t testing.TB) *policy.Policy {
				// The reproducer's outputs directory, there before the
				// policy is built, as a workspace has it.
				p := rolePolicy(t, profiles.RoleReproducer, func(cfg *config.File) {
					if err := os.MkdirAll(filepath.Join(cfg.Root, "repros"), 0o755); err != nil {
						t.Fatal(err)
					}
				})
				onNode(t, p, ns, image)
				// The host's workspace is not on the node; the image's root
				// is, and the writable directory comes by the staged copy.
				p.Workdir = "/"
				return p
			},
			Track: func(testing.TB) func(backends.Sandbox) func() []string {
				return func(sb backends.Sandbox) func() []string {
					return func() []string { return podLeft(c, sb.ID()) }
				}
			},
		}
	})
}

// podLeft names the sandbox's pod (namespace/name) when the API server
// still has it.
func podLeft(c *kubecluster.Cluster, id string) []string {
	ns, name, _ := strings.Cut(id, "/")
	_, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return []string{"pod " + id + ": " + err.Error()}
	}
	return []string{"pod " + id}
}
