package docker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/mount"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// Both ways a command starts, through the holder's control channel and by
// a docker exec (when the holder has none), run through the same flow and
// end the same: own codes, input, signals, timeouts, OOM kills, and a
// cancel that leaves the sandbox for the next command; by docker exec, a
// cancel of a command with input (it has no lifeline) ends the sandbox.
func TestBothExecPathsEndAlike(t *testing.T) {
	testenv.RequireDocker(t)
	for _, path := range []struct {
		name   string
		unbind bool
	}{{"control channel", false}, {"docker exec", true}} {
		t.Run(path.name, func(t *testing.T) {
			f := newFixture(t)
			p := build(t, f, "agent", currentHost(t))
			p.Limits.Memory = 256 << 20
			be, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
			if err != nil {
				t.Fatal(err)
			}
			b := be.(*docker.Backend)
			if path.unbind {
				b.Adjust = func(r *docker.CreateRequest) {
					r.HostConfig.Mounts = slices.DeleteFunc(r.HostConfig.Mounts, func(m mount.Mount) bool {
						return m.Target == docker.ControlDirPath
					})
				}
			}
			sess, err := sandbox.Start(context.Background(), b, p, backends.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close(context.Background())
			s := sess.Sandbox()
			for _, tt := range []struct {
				name      string
				argv      []string
				stdin     string
				timeout   time.Duration
				cancel    time.Duration
				code, sig int
				oom       bool
				out       string
			}{
				{name: "own code", argv: []string{"sh", "-c", "echo hi; exit 3"}, code: 3, out: "hi"},
				{name: "input", argv: []string{"cat"}, stdin: "from the host", out: "from the host"},
				{name: "signal", argv: []string{"sh", "-c", "kill -TERM $$"}, code: 143, sig: 15},
				{name: "SIGKILL", argv: []string{"sh", "-c", "kill -KILL $$"}, code: 137, sig: 9},
				{name: "timeout", argv: []string{"sleep", "30"}, timeout: time.Second, code: 124},
				{name: "oom", argv: []string{"python3", "-c", "x = []\nwhile True: x.append(bytearray(64 << 20))"}, code: 137, sig: 9, oom: true},
				{name: "cancel", argv: []string{"sleep", "30"}, cancel: time.Second, code: 130, sig: 2},
				{name: "after a cancel", argv: []string{"echo", "still here"}, out: "still here"},
				{name: "cancel with input", argv: []string{"sh", "-c", "read x; sleep 30"}, stdin: "y\n", cancel: time.Second, code: 130, sig: 2},
			} {
				if tt.name == "cancel with input" && !path.unbind {
					// Through the holder the supervisor is killed with the
					// sandbox, and its end is not told: the run says the
					// sandbox ended under the command (as before the paths
					// were one).
					continue
				}
				ctx := context.Background()
				if tt.cancel > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.cancel)
					defer cancel()
				}
				cmd := backends.Command{Argv: tt.argv, Timeout: tt.timeout}
				if tt.stdin != "" {
					cmd.Stdin = strings.NewReader(tt.stdin)
				}
				var out testenv.Buffer
				started := time.Now()
				res, err := s.Exec(ctx, cmd, backends.Streams{Stdout: &out, Stderr: &out})
				t.Logf("%s: ended after %v", tt.name, time.Since(started).Round(time.Millisecond))
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if res.ExitCode != tt.code || res.Signal != tt.sig || res.OOMKilled != tt.oom ||
					res.TimedOut != (tt.timeout > 0) || res.Canceled != (tt.cancel > 0) || !strings.Contains(out.String(), tt.out) {
					t.Errorf("%s: %+v, output %q", tt.name, res, out.String())
				}
				if tt.cancel > 0 && time.Since(started) > tt.cancel+10*time.Second {
					t.Errorf("%s: took %v to end after the cancel", tt.name, time.Since(started)-tt.cancel)
				}
			}
		})
	}
}
