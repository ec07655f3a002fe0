//go:build linux

package kubecluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// ProbeImage builds (once per netprobe source) the image the network
// tests' pods run: netprobe alone, static, FROM scratch, and returns its
// name. Load it into a node with Node.Import or StartNode.
func ProbeImage() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "netprobe")
	text, err := os.ReadFile(filepath.Join(src, "main.go"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(text)
	image := "triage-sandbox-test/netprobe:" + hex.EncodeToString(sum[:6])
	if exec.Command("docker", "image", "inspect", image).Run() == nil {
		return image, nil
	}
	dir, err := os.MkdirTemp("", "ts-netprobe-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "netprobe"), ".")
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building netprobe: %v: %s", err, out)
	}
	df := "FROM scratch\nCOPY netprobe /netprobe\nENTRYPOINT [\"/netprobe\"]\nCMD [\"sleep\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command("docker", "build", "-q", "-t", image, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker build %s: %v: %s", image, err, out)
	}
	return image, nil
}

// ProbePod runs image's netprobe with args (nil: sleep) as pod name in ns
// on node, with labels, and returns its address once it runs. The pod is
// non-root with nothing added: what the restricted profile admits.
func (c *Cluster) ProbePod(ctx context.Context, ns, name, node, image string, labels map[string]string, args ...string) (string, error) {
	no, yes, uid := false, true, int64(65534)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: "probe", Image: image, ImagePullPolicy: corev1.PullNever, Args: args,
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: &yes, RunAsUser: &uid, AllowPrivilegeEscalation: &no,
					Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
		},
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating pod %s/%s: %w", ns, name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" &&
			len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
			return p.Status.PodIP, nil
		}
		if err == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			return "", fmt.Errorf("pod %s/%s ended: %s", ns, name, p.Status.Phase)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("pod %s/%s not running with an address: %v; %s", ns, name, ctx.Err(), c.logTail("kubelet"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Exec runs argv in the pod's one container and returns its stdout.
func (c *Cluster) Exec(ctx context.Context, ns, pod string, argv ...string) (string, error) {
	req := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(c.Config, "POST", req.URL())
	if err != nil {
		return "", err
	}
	var out, errOut bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil {
		return out.String(), fmt.Errorf("exec %v in %s/%s: %w: %s", argv, ns, pod, err, errOut.String())
	}
	return out.String(), nil
}

// Verdict is what one connect from a probe pod found.
type Verdict string

// Reached says whether the connect reached its target: only a target's
// own token counts. A target started by a test always listens, so it never
// resets a connect: "refused" there is a firewall's reject, "timeout" its
// drop, "unreachable" a missing route; all three are not reached.
func (v Verdict) Reached(token string) bool { return string(v) == "reached "+token }

// Connect has the probe pod try one TCP connect to addr (HOST:PORT),
// waiting at most d.
func (c *Cluster) Connect(ctx context.Context, ns, pod, addr string, d time.Duration) (Verdict, error) {
	out, err := c.Exec(ctx, ns, pod, "/netprobe", "connect", addr, d.String())
	return Verdict(strings.TrimSpace(out)), err
}

// ServeToken accepts on l and answers each connection with token; the
// returned function says from which addresses connections came.
func ServeToken(t *testing.T, l net.Listener, token string) func() []string {
	t.Helper()
	peers := make(chan string, 100)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			peers <- c.RemoteAddr().String()
			fmt.Fprintln(c, token)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return func() []string {
		var got []string
		for {
			select {
			case p := <-peers:
				got = append(got, p)
			default:
				return got
			}
		}
	}
}
