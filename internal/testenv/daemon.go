package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// Where the private daemon keeps its state. Nothing of it outlives the
// test: its data root (the base image loaded into it, a few hundred MB),
// its exec root and the bind mounts dockerd makes of them are removed when
// the test ends, and before it starts (a run that was killed). The log
// stays only when the test failed. The tests' one declared cache is the
// oci backend's image roots (rootfs.DefaultDir: /var/cache/triage-sandbox
// for root), not anything here: the image is copied in again each run.
const (
	daemonDataDir = "/var/lib/triage-sandbox-testd"
	daemonExecDir = "/run/triage-sandbox-testd"
	daemonLog     = "/tmp/triage-sandbox-testd.log"
)

// Daemon is a private dockerd that fault tests may stop, kill and restart
// without disturbing the daemon every other test uses. It has no bridge,
// no iptables and no registry, and leaves nothing on the host.
type Daemon struct {
	Host    string // DOCKER_HOST value
	Image   string // an image loaded into it
	dataDir string
	execDir string
	logPath string
	cmd     *exec.Cmd
	ctrd    *exec.Cmd // containerd runs apart, as under systemd, and survives dockerd
	args    []string  // dockerd's flags beyond the ones Start gives
}

// StartDaemon starts the private daemon, with dockerd's own flags args
// added, and loads the base image into it.
func StartDaemon(t testing.TB, image string, args ...string) *Daemon {
	t.Helper()
	RequireDocker(t)
	if os.Getuid() != 0 {
		t.Skip("a private dockerd needs root")
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		t.Fatalf("dockerd not installed: %v", err)
	}
	d := &Daemon{dataDir: daemonDataDir, execDir: daemonExecDir, logPath: daemonLog, Image: image, args: args}
	d.Host = "unix://" + d.execDir + "/docker.sock"
	if err := d.removeState(); err != nil {
		t.Fatalf("removing a previous run's private daemon: %v", err)
	}
	_ = os.Remove(d.logPath)
	t.Cleanup(func() {
		d.Stop(syscall.SIGTERM)
		if d.ctrd != nil && d.ctrd.Process != nil {
			_ = d.ctrd.Process.Signal(syscall.SIGTERM)
			_ = d.ctrd.Wait()
		}
		if err := d.removeState(); err != nil {
			t.Errorf("the private daemon's state is left on the host: %v", err)
		}
		if t.Failed() {
			t.Logf("the private daemon's log: %s", d.logPath)
		} else {
			_ = os.Remove(d.logPath)
		}
	})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	if err := d.ensureImage(image); err != nil {
		t.Fatal(err)
	}
	return d
}

// removeState unmounts and removes the daemon's data and exec roots; the
// daemon must not run.
func (d *Daemon) removeState() error {
	var errs []error
	for _, dir := range []string{d.execDir, d.dataDir} {
		if err := unmountUnder(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Start launches dockerd and waits until it answers.
func (d *Daemon) Start() error {
	for _, dir := range []string{d.dataDir, d.execDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	ctrdSock := d.execDir + "/containerd.sock"
	if d.ctrd == nil {
		d.ctrd = exec.Command("containerd", "--root", d.dataDir+"/containerd", "--state", d.execDir+"/containerd",
			"--address", ctrdSock)
		d.ctrd.Stdout, d.ctrd.Stderr = logf, logf
		d.ctrd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := d.ctrd.Start(); err != nil {
			return fmt.Errorf("starting the private containerd: %w", err)
		}
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(ctrdSock); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Its own network namespace: a second dockerd in the host's would tear
	// down docker0 under the main daemon.
	d.cmd = exec.Command("unshare", "--net", "--", "dockerd", "--containerd", ctrdSock, "--data-root", d.dataDir, "--exec-root", d.execDir,
		"-H", d.Host, "--pidfile", d.execDir+"/docker.pid", "--bridge", "none",
		"--iptables=false", "--ip-masq=false", "--ip-forward=false")
	d.cmd.Args = append(d.cmd.Args, d.args...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("starting the private dockerd: %w", err)
	}
	go func() { _ = d.cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if d.Ping() == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the private dockerd did not answer; see %s", d.logPath)
}

// Ping asks the daemon whether it is there.
func (d *Daemon) Ping() error {
	cli, err := client.New(client.WithHost(d.Host))
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return err
}

// Signal sends sig to dockerd.
func (d *Daemon) Signal(sig syscall.Signal) {
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(sig)
	}
}

// Stop sends sig and waits for dockerd to exit.
func (d *Daemon) Stop(sig syscall.Signal) {
	d.Signal(sig)
	d.wait(20 * time.Second)
}

func (d *Daemon) wait(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if d.cmd == nil || d.cmd.Process == nil || syscall.Kill(d.cmd.Process.Pid, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ensureImage copies image from the main daemon when the private one lacks it.
func (d *Daemon) ensureImage(image string) error {
	if exec.Command("docker", "image", "inspect", image).Run() != nil {
		// A machine that could pull debian:bookworm-slim has no offline
		// base; the default image serves as well (it is only larger).
		image = "triage-sandbox:latest"
		d.Image = image
	}
	check := exec.Command("docker", "-H", d.Host, "image", "inspect", image)
	if check.Run() == nil {
		return nil
	}
	save := exec.Command("sh", "-c", "docker save "+strconv.Quote(image)+" | docker -H "+strconv.Quote(d.Host)+" load")
	if out, err := save.CombinedOutput(); err != nil {
		return fmt.Errorf("loading %s into the private daemon: %v: %s", image, err, strings.TrimSpace(string(out)))
	}
	return nil
}
