package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// podmanRunDir holds the test's own Podman service socket; nothing else of
// the service's is the test's: Podman keeps its images and containers in
// its own store (/var/lib/containers), apart from dockerd's, and the
// sandbox image loaded there stays as the tests' cache (scripts/setup-tests.sh
// loads it too).
const podmanRunDir = "/run/triage-sandbox-testpodman"

// Podman is a `podman system service` a test started on a socket of its
// own, serving Docker's API.
type Podman struct {
	Host string // DOCKER_HOST value
	cmd  *exec.Cmd
	done chan struct{}
}

// StartPodman starts Podman's Docker-compatible service as root on a
// socket of the test's own, with image in Podman's store (loaded from
// dockerd when missing), and stops it when the test ends. Podman missing
// fails under CI or TRIAGE_SANDBOX_REQUIRE_DOCKER (scripts/setup-tests.sh
// installs it) and skips elsewhere.
func StartPodman(t testing.TB, image string) *Podman {
	t.Helper()
	RequireRoot(t, "Podman's service runs rootful here")
	if _, err := exec.LookPath("podman"); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("TRIAGE_SANDBOX_REQUIRE_DOCKER") != "" {
			t.Fatalf("podman not installed (scripts/setup-tests.sh installs it): %v", err)
		}
		t.Skipf("podman not installed: %v", err)
	}
	if err := os.MkdirAll(podmanRunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(podmanRunDir, "podman.sock")
	_ = os.Remove(sock)
	p := &Podman{Host: "unix://" + sock, done: make(chan struct{})}
	p.cmd = exec.Command("podman", "system", "service", "--time=0", p.Host)
	var log strings.Builder
	p.cmd.Stdout, p.cmd.Stderr = &log, &log
	// Its own session: a signal to the test's process group does not end
	// it before the cleanup does.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting podman system service: %v", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("stopping the Podman service: %v", err)
		}
		_ = os.RemoveAll(podmanRunDir)
		if t.Failed() {
			t.Logf("the Podman service's log:\n%s", log.String())
		}
	})
	if !Eventually(30*time.Second, func() bool { return p.Ping() == nil }) {
		t.Fatalf("the Podman service did not answer at %s: %v", p.Host, p.Ping())
	}
	if err := ensurePodmanImage(image); err != nil {
		t.Fatal(err)
	}
	return p
}

// Ping asks the service whether it answers.
func (p *Podman) Ping() error {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", strings.TrimPrefix(p.Host, "unix://"))
	}}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://podman/_ping", nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/_ping: %s", resp.Status)
	}
	return nil
}

// Pid is the service's process id.
func (p *Podman) Pid() int { return p.cmd.Process.Pid }

// stop ends the service (SIGTERM, then SIGKILL) and waits for it.
func (p *Podman) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(20 * time.Second):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return fmt.Errorf("it ignored SIGTERM for 20s and was killed")
	case <-time.After(10 * time.Second):
		return fmt.Errorf("pid %d survives SIGKILL", p.cmd.Process.Pid)
	}
}

// ensurePodmanImage loads image into Podman's store from dockerd's when
// Podman lacks it (about a minute for the 1 GB sandbox image).
func ensurePodmanImage(image string) error {
	if exec.Command("podman", "image", "exists", image).Run() == nil {
		return nil
	}
	load := exec.Command("sh", "-c", "docker save "+strconv.Quote(image)+" | podman load")
	if out, err := load.CombinedOutput(); err != nil {
		return fmt.Errorf("loading %s into Podman: %v: %s", image, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// PodmanContainers lists the ids of Podman's containers (running or not)
// with label (key=value).
func PodmanContainers(label string) ([]string, error) {
	out, err := exec.Command("podman", "ps", "-a", "-q", "--no-trunc", "--filter", "label="+label).Output()
	if err != nil {
		return nil, fmt.Errorf("podman ps: %w", err)
	}
	return strings.Fields(string(out)), nil
}
