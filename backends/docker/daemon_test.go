package docker_test

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
	"github.com/triage-sandbox/triage-sandbox/selftest"
)

// TestDaemonThatNeverAnswers: a socket that accepts and never replies must
// give one clear error within the ping bound, not hang.
func TestDaemonThatNeverAnswers(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hang.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	b, err := docker.New(backends.Env{SelfExe: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = b.Available(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Docker daemon") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("took %v to give up", d)
	}
}

func processesWithToken(token string) int { return len(selftest.Survivors(token)) }

// TestDaemonTroubleMidRun kills (-9) or stops (TERM) a private daemon during
// a run: the run ends with one clear error, and once the daemon is back
// nothing of the run is left.
func TestDaemonTroubleMidRun(t *testing.T) {
	d := testenv.StartDaemon(t, profiles.DefaultBaseImage)
	t.Setenv("DOCKER_HOST", d.Host)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			if err := d.Ping(); err != nil {
				if err := d.Start(); err != nil {
					t.Fatal(err)
				}
			}
			f := newFixture(t)
			image := d.Image
			f.cfg.Sandbox.Image = &image
			p := build(t, f, "agent", currentHost(t))
			b, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
			if err != nil {
				t.Fatal(err)
			}
			token := "daemon-fault-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			type out struct {
				res backends.Result
				err error
			}
			done := make(chan out, 1)
			stderr := output.NewCapture(0)
			go func() {
				res, err := sandbox.Run(context.Background(), b, sandbox.Request{Policy: p, Timeout: time.Minute,
					Command: backends.Command{Argv: []string{"sh", "-c", "sleep 40; : " + token}},
					Streams: backends.Streams{Stderr: stderr}})
				done <- out{res.Result, err}
			}()
			cli, err := client.New(client.WithHost(d.Host))
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			// Strike only once the run is waiting on a running container:
			// the process shows up in /proc while the start call is still
			// in flight.
			running := func() bool {
				res, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
					Filters: make(client.Filters).Add("label", profiles.LabelOwner+"=triage-sandbox").Add("status", "running")})
				return err == nil && len(res.Items) > 0 && processesWithToken(token) > 0
			}
			if !testenv.Eventually(20*time.Second, running) {
				t.Fatal("the command never started")
			}
			time.Sleep(200 * time.Millisecond)
			d.Stop(sig)
			var o out
			select {
			case o = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the run did not end after the daemon went away")
			}
			// Either the run fails with one line naming the daemon, or (a
			// graceful stop racing the exit) the command's signal comes back
			// with the init's line saying it was stopped from outside.
			switch {
			case o.err != nil:
				if !strings.Contains(o.err.Error(), "daemon") || strings.Contains(o.err.Error(), "\n") {
					t.Fatalf("want one clear line naming the daemon, got %q", o.err)
				}
			case o.res.Signal != 0 && strings.Contains(stderr.String(), "stopped from outside"):
			default:
				t.Fatalf("the daemon going away was not reported: res %+v stderr %q", o.res, stderr.String())
			}
			if err := d.Start(); err != nil {
				t.Fatal(err)
			}
			// Once the daemon is back: no container of ours and no process.
			var sweepErr error
			left := func() int {
				res, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
					Filters: make(client.Filters).Add("label", profiles.LabelOwner+"=triage-sandbox")})
				if err != nil {
					return -1
				}
				n := 0
				for _, c := range res.Items {
					// A daemon killed mid-removal can keep listing a
					// container its store no longer has (moby/moby#51724:
					// listed Dead, "No such container" to every call):
					// nothing of it is left to remove, so it is not ours
					// left behind. One the daemon still knows counts.
					if _, err := cli.ContainerInspect(context.Background(), c.ID, client.ContainerInspectOptions{}); cerrdefs.IsNotFound(err) {
						t.Logf("the daemon lists %s (%s) but knows no such container: its stale listing", c.ID[:12], c.State)
						continue
					}
					n++
				}
				if n > 0 {
					// What a later run's sweep (or `gc`) does.
					_, sweepErr = b.(*docker.Backend).Sweep(context.Background())
				}
				return n + processesWithToken(token)
			}
			if !testenv.Eventually(30*time.Second, func() bool { return left() == 0 }) {
				res, _ := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
					Filters: make(client.Filters).Add("label", profiles.LabelOwner+"=triage-sandbox")})
				var cs []string
				for _, c := range res.Items {
					cs = append(cs, c.ID[:12]+" "+string(c.State)+" "+c.Status)
				}
				t.Fatalf("after the daemon came back, %d containers/processes of the run remain: containers %q, processes %v; the sweep's last error: %v", left(), cs, selftest.Survivors(token), sweepErr)
			}
			t.Logf("%v: err %v, stderr %q", sig, o.err, strings.TrimSpace(stderr.String()))
		})
	}
}
