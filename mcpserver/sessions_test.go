package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// run is one command in session (none: "") and whether it was refused.
func (f *fixture) runIn(t *testing.T, session string) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	args := map[string]any{"argv": []string{"true"}}
	if session != "" {
		args["session"] = session
	}
	return f.call(t, ToolRun, args)
}

// TestSessionsAreBounded: past max_sessions a new name is refused with
// the bound, where it is set, the live sessions and how to end one; a
// live session still runs, and ending one frees its place.
func TestSessionsAreBounded(t *testing.T) {
	for _, c := range []struct {
		name, toml string
		max        int
	}{
		{"default", "", DefaultMaxSessions},
		{"configured", "[sandbox.mcp]\nmax_sessions = 2\n", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := backendtest.New()
			f := newFixture(t, fake, c.toml)
			var live []string
			for i := range c.max {
				name := fmt.Sprintf("s%d", i)
				if res, _ := f.runIn(t, name); res.IsError {
					t.Fatalf("session %s: %s", name, textOf(res))
				}
				live = append(live, name)
			}
			res, out := f.runIn(t, "one-too-many")
			text := textOf(res)
			if !res.IsError || out["exit_code"] != float64(125) {
				t.Fatalf("session %d of %d was not refused: %s", c.max+1, c.max, text)
			}
			for _, want := range append([]string{fmt.Sprint(c.max), "[sandbox.mcp] max_sessions", ToolEndSession, "10m0s"}, live...) {
				if !strings.Contains(text, want) {
					t.Errorf("the refusal does not say %q: %s", want, text)
				}
			}
			if fake.Starts() != c.max || len(fake.Open()) != c.max {
				t.Fatalf("starts %d, open %d; want %d", fake.Starts(), len(fake.Open()), c.max)
			}
			if res, _ := f.runIn(t, live[0]); res.IsError {
				t.Fatalf("a live session at the bound: %s", textOf(res))
			}
			f.call(t, ToolEndSession, map[string]any{"session": live[0]})
			if res, _ := f.runIn(t, "one-too-many"); res.IsError {
				t.Fatalf("after end_session: %s", textOf(res))
			}
			if len(fake.Open()) != c.max {
				t.Errorf("open %d, want %d", len(fake.Open()), c.max)
			}
		})
	}
}

// TestFailedStartHoldsNoPlace: a session whose sandbox did not start is
// not live: it takes no place under max_sessions.
func TestFailedStartHoldsNoPlace(t *testing.T) {
	fake := backendtest.New()
	f := newFixture(t, fake, "[sandbox.mcp]\nmax_sessions = 1\n")
	fake.SetStartErr(errors.New("no daemon"))
	for _, name := range []string{"a", "b"} {
		if res, _ := f.runIn(t, name); !res.IsError || !strings.Contains(textOf(res), "no daemon") {
			t.Fatalf("session %s: %s", name, textOf(res))
		}
	}
	fake.SetStartErr(nil)
	if res, _ := f.runIn(t, "c"); res.IsError {
		t.Fatalf("failed starts hold the only place: %s", textOf(res))
	}
}

// counting is a backend that counts the starts under way at once.
type counting struct {
	*backendtest.Backend
	now, most atomic.Int32
}

func (c *counting) Start(ctx context.Context, p *policy.Policy, o backends.StartOptions) (backends.Sandbox, error) {
	n := c.now.Add(1)
	defer c.now.Add(-1)
	for {
		m := c.most.Load()
		if n <= m || c.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(50 * time.Millisecond)
	return c.Backend.Start(ctx, p, o)
}

// TestStartsAreBounded: sessions' first commands and runs without a
// session start at most max_starting sandboxes at once; the rest wait.
func TestStartsAreBounded(t *testing.T) {
	b := &counting{Backend: backendtest.New()}
	f := newFixtureOn(t, b, "[sandbox.mcp]\nmax_starting = 2\nmax_sessions = 8\n")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := map[string]any{"argv": []string{"true"}}
			if i%2 == 0 {
				args["session"] = fmt.Sprintf("s%d", i)
			} else {
				args["role"] = "reproducer"
			}
			res, err := f.client.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolRun, Arguments: args})
			if err != nil || res.IsError {
				t.Errorf("call %d: %v %s", i, err, textOf(res))
			}
		}()
	}
	wg.Wait()
	if m := b.most.Load(); m > 2 || m < 1 {
		t.Errorf("%d starts at once, want at most 2", m)
	}
	if b.Starts() != 8 {
		t.Errorf("starts %d, want 8", b.Starts())
	}
}

// TestIdleSessionEnds: a session unused for warm_idle ends by itself
// while the server runs (Run's expiry, not only end_session).
func TestIdleSessionEnds(t *testing.T) {
	fake := backendtest.New()
	f := newFixture(t, fake, "warm_idle = 10\n")
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- f.srv.Run(ctx, st) }()
	t.Cleanup(func() { cancel(); <-done })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolRun, Arguments: map[string]any{"argv": []string{"true"}, "session": "idle"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	started := time.Now()
	for len(fake.Open()) != 0 {
		if time.Since(started) > 20*time.Second {
			t.Fatalf("the session is still open %v after its last command (warm_idle 10 s)", time.Since(started))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d := time.Since(started); d < 10*time.Second {
		t.Errorf("ended after %v, before warm_idle", d)
	}
	if names := f.srv.sessions.names(); len(names) != 0 {
		t.Errorf("sessions still listed: %v", names)
	}
}

func TestExpireEvery(t *testing.T) {
	for _, c := range []struct{ idle, want time.Duration }{
		{10 * time.Second, time.Second},
		{5 * time.Second, time.Second},
		{100 * time.Second, 10 * time.Second},
		{10 * time.Minute, 30 * time.Second},
		{24 * time.Hour, 30 * time.Second},
	} {
		if got := expireEvery(c.idle); got != c.want {
			t.Errorf("expireEvery(%v) = %v, want %v", c.idle, got, c.want)
		}
	}
}

// TestRunsAreBounded: runs without a session hold a sandbox each for
// their command; at most max_runs do at once, the rest wait.
func TestRunsAreBounded(t *testing.T) {
	var now, most atomic.Int32
	fake := backendtest.New()
	fake.NewSandbox = func(n int) *backendtest.Sandbox {
		return &backendtest.Sandbox{Name: fmt.Sprint("fake-", n), ExecFunc: func(context.Context, backends.Command, backends.Streams) (backends.Result, error) {
			n := now.Add(1)
			defer now.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(50 * time.Millisecond)
			return backends.Result{}, nil
		}}
	}
	f := newFixture(t, fake, "[sandbox.mcp]\nmax_runs = 2\nmax_starting = 8\n")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.client.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolRun,
				Arguments: map[string]any{"argv": []string{"true"}, "role": "reproducer"}})
			if err != nil || res.IsError {
				t.Errorf("call %d: %v %s", i, err, textOf(res))
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > 2 || m < 1 {
		t.Errorf("%d runs at once, want at most 2", m)
	}
}
