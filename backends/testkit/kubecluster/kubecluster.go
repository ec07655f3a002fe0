//go:build linux

// Package kubecluster starts a Kubernetes control plane on loopback for
// tests: Debian's etcd and a kube-apiserver built by scripts/kube.sh, with
// throw-away certificates, Pod Security Admission in force and the
// NetworkPolicy API served (and, for end-to-end tests, a node: containerd
// with CRI and runc, the kubelet; node.go; its pods on a bridge inside a
// network namespace of the node's own, podnet.go; NetworkPolicy enforced
// there by kube-router's firewall once StartPolicy runs it, policy.go;
// netprobe pods for the network tests, probe.go). Everything it starts is
// stopped by the test's cleanup; a test process killed outright takes its
// children with it (parent-death signal).
package kubecluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// Version is the Kubernetes version scripts/kube/go.mod pins (a test
// checks they agree).
const Version = "v1.34.3"

// BuildScript builds and caches the binaries this package runs.
const BuildScript = "scripts/kube.sh"

// BinDir is where scripts/kube.sh put the binaries:
// $TRIAGE_SANDBOX_KUBE_DIR, else /var/cache/triage-sandbox/kube/VERSION.
func BinDir() string {
	if d := os.Getenv("TRIAGE_SANDBOX_KUBE_DIR"); d != "" {
		return d
	}
	return filepath.Join("/var/cache/triage-sandbox/kube", Version)
}

// Require skips t in the quick tier, and when a binary the cluster needs
// is missing, unless CI or TRIAGE_SANDBOX_REQUIRE_KUBE is set: there it
// fails, naming the script that builds them.
func Require(t testing.TB, names ...string) {
	t.Helper()
	testenv.SkipShort(t, "starts etcd and kube-apiserver")
	var missing []string
	for _, n := range append([]string{"kube-apiserver"}, names...) {
		if _, err := os.Stat(filepath.Join(BinDir(), n)); err != nil {
			missing = append(missing, filepath.Join(BinDir(), n))
		}
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		missing = append(missing, "etcd (Debian etcd-server)")
	}
	if len(missing) == 0 {
		return
	}
	missingPart(t, fmt.Sprintf("missing %s; build them with %s (cached afterwards)", strings.Join(missing, ", "), BuildScript))
}

// RequireGVisor is for a test of the node's gvisor RuntimeClass: it skips
// t, or fails it where the cluster is required (as Require), when
// scripts/gvisor.sh has not built runsc and its shim.
func RequireGVisor(t testing.TB) {
	t.Helper()
	if msg := GVisorMissing(); msg != "" {
		missingPart(t, msg)
	}
}

// missingPart fails t under CI or TRIAGE_SANDBOX_REQUIRE_KUBE, else skips
// it, with msg saying what is missing and how to make it.
func missingPart(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" || os.Getenv("TRIAGE_SANDBOX_REQUIRE_KUBE") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; set TRIAGE_SANDBOX_REQUIRE_KUBE=1 to make this a failure")
}

// Cluster is a started control plane.
type Cluster struct {
	Dir string
	// Kubeconfig is a file naming the API server and a client certificate
	// in system:masters.
	Kubeconfig string
	Config     *rest.Config
	Client     *kubernetes.Clientset
	// APIPort is the API server's port on 127.0.0.1.
	APIPort int
	pki     *pki
	procs   []*proc
	// stopBinder ends the node's binder (nil: no node).
	stopBinder context.CancelFunc
	// entry is the cluster's registration for a reap (reap.go).
	entry string
}

// Start starts etcd and kube-apiserver on loopback and returns once the
// API server is ready; t's cleanup stops both.
func Start(t testing.TB) *Cluster {
	t.Helper()
	Require(t)
	c, err := start(t.TempDir())
	if err != nil {
		if c != nil {
			c.Stop()
		}
		t.Fatalf("starting the test cluster: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// Launch is Start for a cluster shared by a package's tests (TestMain
// stops it): dir must outlive them. Call Require first.
func Launch(dir string) (*Cluster, error) {
	c, err := start(dir)
	if err != nil && c != nil {
		c.Stop()
	}
	return c, err
}

func start(dir string) (*Cluster, error) {
	c := &Cluster{Dir: dir}
	if err := c.register(); err != nil {
		return nil, err
	}
	var err error
	if c.pki, err = newPKI(dir); err != nil {
		return nil, err
	}
	etcdURL, err := c.startEtcd()
	if err != nil {
		return c, err
	}
	if err := c.startAPIServer(etcdURL); err != nil {
		return c, err
	}
	return c, c.connect()
}

func (c *Cluster) startEtcd() (string, error) {
	client, peer := freePort(), freePort()
	url := fmt.Sprintf("http://127.0.0.1:%d", client)
	p, err := c.run("etcd", "etcd", "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", url, "--advertise-client-urls", url,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", peer),
		"--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return "", err
	}
	return url, p.waitDial(fmt.Sprintf("127.0.0.1:%d", client), 30*time.Second)
}

func (c *Cluster) startAPIServer(etcdURL string) error {
	crt, key, err := c.pki.issue("apiserver", "kube-apiserver", nil, true)
	if err != nil {
		return err
	}
	sa, err := c.pki.serviceAccountKey()
	if err != nil {
		return err
	}
	kcrt, kkey, err := c.pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, false)
	if err != nil {
		return err
	}
	c.APIPort = freePort()
	p, err := c.run("kube-apiserver", filepath.Join(BinDir(), "kube-apiserver"),
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", BridgeAddress, // apiforward.go
		"--secure-port", strconv.Itoa(c.APIPort), "--cert-dir", filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file", crt, "--tls-private-key-file", key, "--client-ca-file", c.pki.CAFile,
		"--service-account-key-file", sa, "--service-account-signing-key-file", sa,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-cluster-ip-range", serviceRange, "--authorization-mode", "RBAC",
		// PodSecurity is on by default; named so that a change of default
		// cannot silently drop what the tests judge.
		"--enable-admission-plugins", "PodSecurity",
		"--kubelet-client-certificate", kcrt, "--kubelet-client-key", kkey,
		"--kubelet-preferred-address-types", "InternalIP",
		"--allow-privileged=false", "--profiling=false", "--v=0")
	if err != nil {
		return err
	}
	return p.waitDial(fmt.Sprintf("127.0.0.1:%d", c.APIPort), 2*time.Minute)
}

// connect writes the admin kubeconfig and waits until the API server
// says it is ready.
func (c *Cluster) connect() error {
	crt, key, err := c.pki.issue("admin", "admin", []string{"system:masters"}, false)
	if err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, fmt.Sprintf("https://127.0.0.1:%d", c.APIPort), c.pki.CAFile, crt, key); err != nil {
		return err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return err
	}
	c.Config.QPS, c.Config.Burst = 1000, 2000
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		var body []byte
		body, last = c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if last == nil && strings.TrimSpace(string(body)) == "ok" {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the API server did not become ready: %v; %s", last, c.logTail("kube-apiserver"))
}

// writeKubeconfig writes a kubeconfig for server with a client certificate.
func writeKubeconfig(path, server, ca, crt, key string) error {
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority: %q}
users:
- name: test
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: test
  context: {cluster: test, user: test, namespace: default}
current-context: test
`, server, ca, crt, key)
	return os.WriteFile(path, []byte(text), 0o600)
}

// Stop stops everything Start started, last first, and waits for it.
func (c *Cluster) Stop() {
	if c.stopBinder != nil {
		c.stopBinder()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].name == "containerd" {
			// The kubelet is gone; the containers it left run under
			// shims outside containerd's process group.
			c.killTasks()
		}
		c.procs[i].stop()
	}
	if len(c.procs) > 0 {
		unmountUnder(c.Dir)
		_ = removeCgroupRoot(c.Dir)
	}
	c.procs = nil
	if c.entry != "" {
		_ = os.Remove(c.entry)
	}
}

// serviceRange is the cluster's service addresses (no proxy serves them).
const serviceRange = "10.0.0.0/24"

// proc is one process of the cluster.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// run starts name (argv) with its output in DIR/NAME.log, in a process
// group of its own, killed if the test process dies.
func (c *Cluster) run(name string, argv ...string) (*proc, error) {
	return c.runEnv(name, nil, argv...)
}

// runEnv is run with env added to this process's environment.
func (c *Cluster) runEnv(name string, env []string, argv ...string) (*proc, error) {
	logPath := filepath.Join(c.Dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	return p, nil
}

// waitDial waits until addr accepts connections or the process ended.
func (p *proc) waitDial(addr string, d time.Duration) error {
	return p.waitUntil("did not listen on "+addr, d, func() bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
}

// waitUntil polls ready until it holds, the process ends or d passes;
// what names the failure ("did not listen on ADDR").
func (p *proc) waitUntil(what string, d time.Duration, ready func() bool) error {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		select {
		case <-p.done:
			return fmt.Errorf("%s ended: %s", p.name, tail(p.log))
		default:
		}
		if ready() {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s %s within %s: %s", p.name, what, d, tail(p.log))
}

// stop sends SIGTERM to the process group, SIGKILL after a grace.
func (p *proc) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	// Children that left the group (none expected) still die with it.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

func (c *Cluster) logTail(name string) string { return tail(filepath.Join(c.Dir, name+".log")) }

// tail is the last lines of a log, for an error message.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 15 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// freePort is a loopback port free a moment ago.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
