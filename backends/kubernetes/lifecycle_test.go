//go:build linux

package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// testBase is the image the test's pods run, with the binary added.
const testBase = "triage-sandbox-base:bookworm"

var sharedNode struct {
	once  sync.Once
	n     *kubecluster.Node
	image string
	err   error
	// imported are the images loaded into the node since (cliWorkspace).
	mu       sync.Mutex
	imported map[string]bool
}

// node is the shared cluster's one node (containerd, runc, the kubelet)
// and the image its sandboxes run: the base with the static binary at
// launch.InitPath.
func node(t *testing.T) (*kubecluster.Cluster, *kubecluster.Node, string) {
	t.Helper()
	kubecluster.Require(t, "kubelet")
	kubecluster.RequireNode(t)
	testenv.RequireDocker(t)
	c := cluster(t)
	sharedNode.once.Do(func() {
		if sharedNode.err = buildImage(kubecluster.PauseImage, "FROM "+testBase+"\nENTRYPOINT [\"/bin/sleep\", \"infinity\"]\n", ""); sharedNode.err != nil {
			return
		}
		bin := testenv.Binary(t)
		data, err := os.ReadFile(bin)
		if err != nil {
			sharedNode.err = err
			return
		}
		sum := sha256.Sum256(data)
		sharedNode.image = "triage-sandbox-test/kube:" + hex.EncodeToString(sum[:6])
		if sharedNode.err = buildImage(sharedNode.image, "FROM "+testBase+"\nCOPY triage-sandbox /.triage-sandbox/triage-sandbox\n", bin); sharedNode.err != nil {
			return
		}
		sharedNode.n, sharedNode.err = c.StartNode(sharedNode.image)
	})
	if sharedNode.err != nil {
		t.Fatalf("starting the test node: %v", sharedNode.err)
	}
	return c, sharedNode.n, sharedNode.image
}

// buildImage builds tag from dockerfile, with bin (if any) in the context.
func buildImage(tag, dockerfile, bin string) error {
	if exec.Command("docker", "image", "inspect", tag).Run() == nil {
		return nil
	}
	dir, err := os.MkdirTemp("", "ts-kube-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin != "" {
		data, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "triage-sandbox"), data, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return err
	}
	out, err := exec.Command("docker", "build", "-q", "-t", tag, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker build %s: %v: %s", tag, err, out)
	}
	return nil
}

// nodePolicy is a role's policy for the test node: its image, and the
// weaker modes a pod on it has (no NetworkPolicy controller, no pids
// limit per pod).
func nodePolicy(t testing.TB, role profiles.Role, ns, image string) *policy.Policy {
	p := rolePolicy(t, role, nil)
	onNode(t, p, ns, image)
	return p
}

// onNode makes p the test node's: its image, and the weaker modes a pod
// on it has.
func onNode(t testing.TB, p *policy.Policy, ns, image string) {
	t.Helper()
	p.Base.Image, p.Namespace = image, ns
	p.Accepted = append(p.Accepted, profiles.CapOwnLoopback, profiles.CapPidsLimit)
	if _, err := policy.Enforce(p, Name, Capabilities()); err != nil {
		t.Fatal(err)
	}
}

// TestLifecycle: Start makes the pod and waits for its holder; Exec runs
// commands through the supervisor over the exec stream (output, exit
// codes, a timeout, input); Close deletes the pod and its NetworkPolicy.
func TestLifecycle(t *testing.T) {
	c, n, image := node(t)
	ns := restrictedNamespace(t, c)
	b := backendFor(t, c, ns)
	b.NodeName = n.Name
	p := nodePolicy(t, profiles.RoleReproducer, ns, image)
	// The host's workspace is not on the node; the image's root is.
	p.Workdir = "/"
	// A small file size limit, so a write past it is cheap: a pod's spec
	// has no rlimits, the supervisor sets them.
	p.Limits.FileSize = 1 << 20
	ctx := context.Background()
	start := time.Now()
	sb, err := b.Start(ctx, p, backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started in %s", time.Since(start).Round(time.Millisecond))
	defer sb.Close(ctx)
	run := func(cmd backends.Command) (backends.Result, string) {
		var out testenv.Buffer
		res, err := sb.Exec(ctx, cmd, backends.Streams{Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatalf("%v: %v", cmd.Argv, err)
		}
		return res, out.String()
	}
	if res, out := run(backends.Command{Argv: []string{"sh", "-c", "echo hi; id -u"}}); res.ExitCode != 0 || out != fmt.Sprintf("hi\n%d\n", p.User.UID) {
		t.Errorf("echo: %+v %q", res, out)
	}
	if res, _ := run(backends.Command{Argv: []string{"sh", "-c", "exit 3"}}); res.ExitCode != 3 {
		t.Errorf("exit 3: %+v", res)
	}
	if res, _ := run(backends.Command{Argv: []string{"no-such-program"}}); res.ExitCode != 127 {
		t.Errorf("not found: %+v", res)
	}
	if res, out := run(backends.Command{Argv: []string{"cat"}, Stdin: strings.NewReader("input\n")}); res.ExitCode != 0 || out != "input\n" {
		t.Errorf("stdin: %+v %q", res, out)
	}
	if res, _ := run(backends.Command{Argv: []string{"sleep", "60"}, Timeout: 2 * time.Second}); !res.TimedOut {
		t.Errorf("timeout: %+v", res)
	}
	if res, out := run(backends.Command{Argv: []string{"sh", "-c",
		// stderr closed: the shell's "File size limit exceeded" would race
		// the stdout lines (two streams over the exec, in no set order).
		`exec 2>/dev/null; echo $(ulimit -n) $(ulimit -c); head -c 3000000 /dev/zero > /tmp/big; echo big=$?; wc -c < /tmp/big`}}); res.ExitCode != 0 ||
		!strings.HasPrefix(out, fmt.Sprintf("%d 0\n", p.Limits.NoFile)) || strings.Contains(out, "big=0") || !strings.HasSuffix(out, "\n1048576\n") {
		t.Errorf("rlimits: %q (%+v), want nofile %d, core 0 and a write past 1 MiB failed at 1048576 bytes", out, res, p.Limits.NoFile)
	}
	// The pod network's eth0 is there: what the pod reaches over it is
	// the NetworkPolicy's to say (TestDenyAllEnforced).
	if res, out := run(backends.Command{Argv: []string{"sh", "-c", "ls /sys/class/net"}}); res.ExitCode != 0 || strings.Join(strings.Fields(out), " ") != "eth0 lo" {
		t.Errorf("interfaces: %q (%+v), want the pod network's eth0 and lo", out, res)
	}
	closed := time.Now()
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("closed in %s", time.Since(closed).Round(time.Millisecond))
}
