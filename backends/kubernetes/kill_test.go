//go:build linux

package kubernetes

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// The owner process of TestKill9: it starts a sandbox with the kubeconfig
// from $KUBECONFIG (the usual places), says its name and waits to die.
func TestMain9Owner(t *testing.T) {
	if os.Getenv("TS_KUBE_OWNER_NS") == "" {
		t.Skip("the owner process of TestKill9")
	}
	b, err := New(backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	kb := b.(*Backend)
	kb.NodeName = os.Getenv("TS_KUBE_OWNER_NODE")
	p := nodePolicy(t, profiles.RoleReproducer, os.Getenv("TS_KUBE_OWNER_NS"), os.Getenv("TS_KUBE_OWNER_IMAGE"))
	p.Workdir = "/"
	sb, err := kb.Start(context.Background(), p, backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("started " + sb.(*sandbox).r.Pod.Name + "\n")
	time.Sleep(10 * time.Minute)
}

// TestKill9: after kill -9 of the owner, the holder ends (its attach,
// the lifeline, is gone) and gc removes the pod and its NetworkPolicy.
func TestKill9(t *testing.T) {
	c, n, image := node(t)
	ns := restrictedNamespace(t, c)
	b := backendFor(t, c, ns)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMain9Owner$", "-test.v")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "TS_KUBE_OWNER_NS="+ns,
		"TS_KUBE_OWNER_NODE="+n.Name, "TS_KUBE_OWNER_IMAGE="+image)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var name string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "started "); ok {
			name = rest
			break
		}
		t.Log(sc.Text())
	}
	if name == "" {
		_ = cmd.Process.Kill()
		t.Fatalf("the owner did not start its sandbox: %v", cmd.Wait())
	}
	// A failure must not leave the pod holding the node's CPUs.
	t.Cleanup(func() {
		_ = b.cli.deletePod(context.Background(), ns, name)
		_ = b.cli.deleteNetworkPolicy(context.Background(), ns, name)
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	killed := time.Now()
	ctx := context.Background()
	if !testenv.Eventually(time.Minute, func() bool {
		pod, err := b.cli.getPod(ctx, ns, name)
		return err == nil && holderEnded(pod)
	}) {
		t.Fatal("the holder still runs a minute after its owner was killed")
	}
	t.Logf("the holder ended %s after kill -9", time.Since(killed).Round(100*time.Millisecond))
	removed, err := b.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pod/" + ns + "/" + name, "networkpolicy/" + ns + "/" + name} {
		if !slices.Contains(removed, want) {
			t.Errorf("gc removed %v, not %s", removed, want)
		}
	}
}
