//go:build linux

package kubernetes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selftestBase is the sandbox image scripts/setup.sh builds (Chromium in
// it, for the selftest's browser check); the tests add the binary.
const selftestBase = "triage-sandbox:latest"

// cliEnv is a workspace whose triage.toml runs the kubernetes backend on
// the test node, and the second binary to run there.
type cliEnv struct {
	root, bin string
	env       []string
	c         *kubecluster.Cluster
	ns        string
}

// cliWorkspace makes the node's image from the sandbox image, a
// restricted namespace, and a workspace (with a checkout beside it)
// configured for them; extra is appended to [sandbox], reproducer to
// [sandbox.reproducer].
func cliWorkspace(t *testing.T, extra, reproducer string) *cliEnv {
	t.Helper()
	c, n, _ := node(t)
	if exec.Command("docker", "image", "inspect", selftestBase).Run() != nil {
		t.Fatalf("no %s: scripts/setup.sh builds it", selftestBase)
	}
	bin := testenv.Binary(t)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	image := "triage-sandbox-test/kube-selftest:" + hex.EncodeToString(sum[:6])
	if err := buildImage(image, "FROM "+selftestBase+"\nCOPY triage-sandbox /.triage-sandbox/triage-sandbox\n", bin); err != nil {
		t.Fatal(err)
	}
	sharedNode.mu.Lock()
	if !sharedNode.imported[image] {
		if err := n.Import(image); err != nil {
			sharedNode.mu.Unlock()
			t.Fatal(err)
		}
		if sharedNode.imported == nil {
			sharedNode.imported = map[string]bool{}
		}
		sharedNode.imported[image] = true
	}
	sharedNode.mu.Unlock()
	ns := restrictedNamespace(t, c)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "ws")
	for _, d := range []string{root, filepath.Join(dir, "widgets")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A small CPU share: each pod asks for its limits, and the node's two
	// CPUs then hold 8 agent or 4 reproducer pods at once (the binder keeps
	// the rest pending, as a scheduler would); a reproducer's Chromium
	// needs the larger share.
	toml := fmt.Sprintf("[project]\ncheckout = \"../widgets\"\n[sandbox]\nbackend = \"kubernetes\"\nimage = %q\nnamespace = %q\n"+
		"accept_weaker = [\"own_loopback\", \"pids_limit\"]\ncpus = 0.25\n%s[sandbox.reproducer]\ncpus = 0.5\n%s", image, ns, extra, reproducer)
	if err := os.WriteFile(filepath.Join(root, "triage.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	warmDir := t.TempDir()
	if err := os.Chmod(warmDir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "XDG_STATE_HOME="+t.TempDir(), "TRIAGE_SANDBOX_WARM_DIR="+warmDir)
	return &cliEnv{root: root, bin: testenv.KubeBinary(t), env: env, c: c, ns: ns}
}

// run runs the second binary in the workspace.
func (e *cliEnv) run(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(e.bin, args...)
	cmd.Dir, cmd.Env = e.root, e.env
	var o, s bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &s
	err = cmd.Run()
	return o.String(), s.String(), err
}

// awaitEmpty waits (up to d) until no pod or NetworkPolicy of ours is
// left in the namespace: what a keeper removes, it removes after the
// command that asked for it returned.
func (e *cliEnv) awaitEmpty(t *testing.T, d time.Duration) {
	t.Helper()
	opts := metav1.ListOptions{LabelSelector: ownerSelector}
	empty := testenv.Eventually(d, func() bool {
		pods, err := e.c.Client.CoreV1().Pods(e.ns).List(context.Background(), opts)
		nps, err2 := e.c.Client.NetworkingV1().NetworkPolicies(e.ns).List(context.Background(), opts)
		return err == nil && err2 == nil && len(pods.Items)+len(nps.Items) == 0
	})
	if !empty {
		t.Errorf("pods or NetworkPolicies of ours still in %s after %s", e.ns, d)
	}
}
