//go:build linux

package kubernetes

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// countingTransport counts the client's requests.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// TestScale500: 500 sandboxes' objects (a pod bound to one of a few fake
// nodes that never run it, and its NetworkPolicy) created and removed
// through the backend's own create and remove against the real API
// server, 16 at a time, with the creation rate, the client's request rate
// and a check that nothing is left. TRIAGE_SANDBOX_KUBE_SCALE changes the
// count.
func TestScale500(t *testing.T) {
	c := cluster(t)
	ns := restrictedNamespace(t, c)
	n := 500
	if v, err := strconv.Atoi(os.Getenv("TRIAGE_SANDBOX_KUBE_SCALE")); err == nil && v > 0 {
		n = v
	}
	var requests atomic.Int64
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &requests} })
	b, err := NewForConfig(cfg, ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nodes := fakeNodes(t, c.Client.CoreV1().Nodes(), 5)
	p := rolePolicy(t, profiles.RoleReproducer, nil)
	made := make([]*Rendered, n)
	work := func(f func(i int) error) (time.Duration, int64) {
		before := requests.Load()
		start := time.Now()
		var wg sync.WaitGroup
		next := atomic.Int64{}
		errs := make(chan error, n)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					if err := f(i); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		return time.Since(start), requests.Load() - before
	}
	created, createReqs := work(func(i int) error {
		info := b.runInfo(p, backendsTTL(p))
		info.Name, info.NodeName = fmt.Sprintf("scale-%04d", i), nodes[i%len(nodes)]
		r, err := Render(p, info)
		if err != nil {
			return err
		}
		made[i] = r
		return b.create(ctx, r)
	})
	removed, removeReqs := work(func(i int) error { return b.remove(ctx, made[i]) })
	assertNothingLeft(t, c, ns)
	t.Logf("%d sandboxes (pod + NetworkPolicy each), 16 at a time, %d fake nodes", n, len(nodes))
	t.Logf("create: %s, %.0f sandboxes/s, %d requests (%.0f/s, %.1f per sandbox)",
		created.Round(time.Millisecond), float64(n)/created.Seconds(), createReqs, float64(createReqs)/created.Seconds(), float64(createReqs)/float64(n))
	t.Logf("remove: %s, %.0f sandboxes/s, %d requests (%.0f/s, %.1f per sandbox)",
		removed.Round(time.Millisecond), float64(n)/removed.Seconds(), removeReqs, float64(removeReqs)/removed.Seconds(), float64(removeReqs)/float64(n))
}

// fakeNodes registers k Node objects no kubelet stands behind, removed
// by the test's cleanup.
func fakeNodes(t *testing.T, nodes interface {
	Create(context.Context, *corev1.Node, metav1.CreateOptions) (*corev1.Node, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}, k int) []string {
	t.Helper()
	var names []string
	for i := range k {
		name := fmt.Sprintf("ts-fake-node-%d-%d", os.Getpid(), i)
		if _, err := nodes.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{profiles.LabelOwner: "triage-sandbox-test"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		t.Cleanup(func() { _ = nodes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	return names
}
