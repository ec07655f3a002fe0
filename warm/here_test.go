package warm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/warm/fastpath"
)

// attached is everything a run sees of an attached sandbox and of one
// command in it.
type attached struct {
	ID, Err, ErrType, Stdout, Stderr string
	Scratch                          policy.ScratchPaths
	Warnings                         []string
	Discarded                        bool
	Result                           backends.Result
}

func attachAndRun(ctx context.Context, b backends.Backend, p *policy.Policy, cancelAfter time.Duration) (attached, error) {
	sb, err := b.Start(ctx, p, backends.StartOptions{})
	if err != nil {
		return attached{}, err
	}
	defer sb.Close(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cancelAfter > 0 {
		time.AfterFunc(cancelAfter, cancel)
	}
	var out, errOut bytes.Buffer
	res, err := sb.Exec(ctx, backends.Command{Argv: []string{"true"}, Workdir: "/w", Timeout: time.Minute},
		backends.Streams{Stdout: &out, Stderr: &errOut})
	a := attached{ID: sb.ID(), Scratch: sb.Scratch(), Warnings: sb.Warnings(), Discarded: backends.CheckoutDiscarded(sb),
		Stdout: out.String(), Stderr: errOut.String(), Result: res}
	if err != nil {
		a.Err, a.ErrType = err.Error(), fmt.Sprintf("%T", err)
	}
	return a, nil
}

type typedErr struct{}

func (typedErr) Error() string { return "the sandbox is gone" }

// TestHereIsWhatARemoteAttachSees: a front's run in the keeper attaches
// to the keeper's sandbox in process (Here); it sees what an attach over
// the keeper's socket sees — the sandbox's id, scratch, warnings, the
// command's output and result, a failure as its text, a cancel as exit
// 130 — and only the keeper's own policy is served.
func TestHereIsWhatARemoteAttachSees(t *testing.T) {
	tests := []struct {
		name        string
		sb          func() *backendtest.Sandbox
		cancelAfter time.Duration
	}{
		{"ran", func() *backendtest.Sandbox {
			return &backendtest.Sandbox{Stdout: "out\n", Stderr: "err\n", Result: backends.Result{ExitCode: 3, Duration: time.Second}, Warns: []string{"w"}}
		}, 0},
		{"failed", func() *backendtest.Sandbox { return &backendtest.Sandbox{Stdout: "partial", ExecErr: typedErr{}} }, 0},
		{"canceled", func() *backendtest.Sandbox {
			return &backendtest.Sandbox{ExecFunc: func(ctx context.Context, _ backends.Command, out backends.Streams) (backends.Result, error) {
				_, _ = out.Stdout.Write([]byte("started\n"))
				<-ctx.Done()
				return backends.Result{ExitCode: 143}, nil
			}}
		}, 50 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortDir(t)
			sb := tc.sb()
			sb.Name = "sb-" + tc.name
			b := backendtest.NewShared(sb)
			p := warmPolicy(policy.Warm{Session: "s", Idle: time.Minute})
			other := warmPolicy(policy.Warm{Session: "other", Idle: time.Minute})
			type inKeeper struct {
				a             attached
				err, otherErr error
			}
			got := make(chan inKeeper, 1)
			fast := func(ctx context.Context, _ fastpath.Request, here *Here, _, _ io.Writer) (int, string) {
				var r inKeeper
				r.a, r.err = attachAndRun(ctx, here, p, tc.cancelAfter)
				_, r.otherErr = here.Start(ctx, other, backends.StartOptions{})
				got <- r
				return 0, ""
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			kept := make(chan error, 1)
			go func() {
				kept <- Keep(ctx, KeeperOptions{Dir: dir, Policy: p, Backend: b, Log: io.Discard, Fast: fast})
			}()
			defer func() { cancel(); <-kept }()
			// The keeper in this process first listens: until then an
			// attach would try to spawn one (there is no binary to).
			awaitListening(t, paths{dir, key(p)}.socket(), kept)
			rb := &Backend{Backend: b, Dir: dir}
			remote, err := attachAndRun(ctx, rb, p, tc.cancelAfter)
			if err != nil {
				t.Fatalf("attaching over the socket: %v", err)
			}
			cwd, _ := os.Getwd()
			req := fastpath.Request{Args: []string{"run", "--session", "s", "--", "true"}, Cwd: cwd, CLI: "x"}
			if code, err := fastpath.Run(ctx, paths{dir, key(p)}.socket(), req, nil, io.Discard, io.Discard); err != nil || code != 0 {
				t.Fatalf("the front's request: exit %d, %v", code, err)
			}
			r := <-got
			if r.err != nil {
				t.Fatalf("attaching in the keeper: %v", r.err)
			}
			if !reflect.DeepEqual(r.a, remote) {
				t.Errorf("in the keeper:\n%+v\nover the socket:\n%+v", r.a, remote)
			}
			if r.otherErr == nil {
				t.Error("Here started a sandbox for another session's policy")
			}
		})
	}
}

// awaitListening returns once sock accepts a connection, or fails t when
// the keeper (kept) ended first or a minute passed (a loaded machine).
func awaitListening(t *testing.T, sock string, kept chan error) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("the keeper never listened on %s: %v", sock, err)
		}
		select {
		case err := <-kept:
			kept <- err // for the deferred wait on it
			t.Fatalf("the keeper ended before it listened: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
