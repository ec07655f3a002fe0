package docker_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// With the control socket bound in, commands and their copy back start
// through the holder: the container never sees a docker exec. Without it
// (a daemon that cannot bind the host's socket), the holder says so and
// commands are docker execs, with the same results.
func TestControlChannelAndFallback(t *testing.T) {
	testenv.RequireDocker(t)
	for _, tt := range []struct {
		name      string
		unbind    bool
		wantExecs bool
	}{
		{"control channel", false, false},
		{"docker exec fallback", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			p := build(t, f, "agent", currentHost(t))
			be, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
			if err != nil {
				t.Fatal(err)
			}
			b := be.(*docker.Backend)
			if tt.unbind {
				b.Adjust = func(r *docker.CreateRequest) {
					r.HostConfig.Mounts = slices.DeleteFunc(r.HostConfig.Mounts, func(m mount.Mount) bool {
						return m.Target == docker.ControlDirPath
					})
				}
			}
			started := time.Now()
			sess, err := sandbox.Start(context.Background(), b, p, backends.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close(context.Background())
			var out testenv.Buffer
			res, err := sess.Exec(context.Background(), sandbox.Request{Policy: p, NoAudit: true,
				Command: backends.Command{Argv: []string{"sh", "-c", "echo hi; echo err >&2; exit 3"}},
				Streams: backends.Streams{Stdout: &out, Stderr: &out}})
			if err != nil || res.ExitCode != 3 || !bytes.Contains(out.Bytes(), []byte("hi")) || !bytes.Contains(out.Bytes(), []byte("err")) {
				t.Fatalf("run: %+v %v %q", res.Result, err, out.String())
			}
			if got := execCreated(t, b.Client(), sess.Sandbox().ID(), started); got != tt.wantExecs {
				t.Fatalf("docker execs created in the container: %v, want %v", got, tt.wantExecs)
			}
			// A used control socket does not stay visible inside (socket
			// scanners report it); the control: the scan finds a socket
			// the command made itself.
			out.Reset()
			res, err = sess.Exec(context.Background(), sandbox.Request{Policy: p, NoAudit: true,
				Command: backends.Command{Argv: []string{"python3", "-c",
					"import socket,os\ns=socket.socket(socket.AF_UNIX); s.bind(os.environ['HOME']+'/own.sock')\n" +
						"for d in ('/.triage-sandbox', os.environ['HOME']):\n" +
						"  for r,_,fs in os.walk(d):\n" +
						"    for f in fs:\n" +
						"      import stat\n" +
						"      if stat.S_ISSOCK(os.lstat(os.path.join(r,f)).st_mode): print(os.path.join(r,f))"}},
				Streams: backends.Streams{Stdout: &out, Stderr: &out}})
			if err != nil || res.ExitCode != 0 || !strings.Contains(out.String(), "own.sock") {
				t.Fatalf("control: the scan did not find the command's own socket: %+v %v %q", res.Result, err, out.String())
			}
			if strings.Contains(out.String(), "/.triage-sandbox") {
				t.Fatalf("a socket of ours stays visible inside: %q", out.String())
			}
		})
	}
}

// execCreated reports whether the daemon created an exec in container id
// since since (its events, which outlive the exec).
func execCreated(t *testing.T, cli *client.Client, id string, since time.Time) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := cli.Events(ctx, client.EventsListOptions{
		Since: strconv.FormatInt(since.Add(-time.Second).Unix(), 10), Until: strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10),
		Filters: make(client.Filters).Add("container", id).Add("type", "container"),
	})
	for {
		select {
		case m, ok := <-ev.Messages:
			if !ok {
				return false
			}
			if strings.HasPrefix(string(m.Action), "exec_create") {
				return true
			}
		case err := <-ev.Err:
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("reading the daemon's events: %v", err)
			}
			return false
		}
	}
}
