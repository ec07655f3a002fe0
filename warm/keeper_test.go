package warm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// warmPolicy is a small policy asking for w.
func warmPolicy(w policy.Warm) *policy.Policy {
	return &policy.Policy{Role: "agent", WorkspaceRoot: "/w", Backend: backendtest.Name, Base: policy.Base{Image: "i"}, Warm: w}
}

// poolKeeper is a keeper of a pool of size on b, not started; ctx ends
// with the test.
func poolKeeper(t *testing.T, b backends.Backend, size int) (*keeper, context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	k := newKeeper(KeeperOptions{Dir: t.TempDir(), Policy: warmPolicy(policy.Warm{Pool: size, Idle: time.Minute}),
		Backend: b, Log: io.Discard}, cancel)
	return k, ctx, cancel
}

// startFill runs fill until the returned stop is called, which waits for
// it to end.
func startFill(ctx context.Context, k *keeper) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.fill(ctx)
	}()
	return func() { cancel(); <-done }
}

// closedAll: every sandbox b started was closed exactly once.
func closedAll(t *testing.T, b *backendtest.Backend) {
	t.Helper()
	closes := 0
	for _, sb := range b.Started() {
		if n := sb.Closes(); n != 1 {
			t.Errorf("%s closed %d times", sb.ID(), n)
		}
		closes += sb.Closes()
	}
	if started := len(b.Started()); closes != started {
		t.Errorf("%d sandboxes started, %d closes", started, closes)
	}
}

func TestFillFillsThePoolToItsSize(t *testing.T) {
	for _, size := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("pool of %d", size), func(t *testing.T) {
			b := backendtest.New()
			k, ctx, _ := poolKeeper(t, b, size)
			stop := startFill(ctx, k)
			if !testenv.Eventually(5*time.Second, func() bool { return len(k.ready) == size }) {
				t.Fatalf("%d ready, want %d", len(k.ready), size)
			}
			time.Sleep(50 * time.Millisecond) // no more than the size
			if n := b.Starts(); n != size {
				t.Errorf("%d starts for a pool of %d", n, size)
			}
			for _, opts := range b.StartOptions() {
				if opts.TTL != k.pooledTTL() {
					t.Errorf("a pooled sandbox's TTL is %s, want %s", opts.TTL, k.pooledTTL())
				}
				if !opts.DeferStaging {
					t.Error("a pooled sandbox was staged at the fill: a run would see the host as it was then")
				}
			}
			for _, sb := range b.Started() {
				if events, _, _ := sb.Record(); len(events) != 0 {
					t.Errorf("%s was asked %v while it waited in the pool", sb.ID(), events)
				}
			}
			stop()
			k.drainPool(context.Background())
			closedAll(t, b)
		})
	}
}

func TestFillRetriesAFailedStart(t *testing.T) {
	b := backendtest.New()
	b.StartErr = errors.New("the daemon said no")
	k, ctx, _ := poolKeeper(t, b, 1)
	stop := startFill(ctx, k)
	defer stop()
	if !testenv.Eventually(5*time.Second, func() bool { return b.Starts() >= 1 }) {
		t.Fatal("fill never tried to start a sandbox")
	}
	b.SetStartErr(nil)
	// The first retry comes after a second's backoff.
	if !testenv.Eventually(5*time.Second, func() bool { return len(k.ready) == 1 }) {
		t.Fatalf("the pool did not fill once starts succeeded: %d starts", b.Starts())
	}
	stop()
	k.drainPool(context.Background())
	closedAll(t, b)
}

func TestTake(t *testing.T) {
	tests := []struct {
		name       string
		ready      int // sandboxes in the pool before the take
		wantStarts int // starts the take itself makes
	}{
		{"from the pool", 1, 0},
		{"none ready: started now", 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := backendtest.New()
			k, ctx, _ := poolKeeper(t, b, 1)
			var pooled backends.Sandbox
			for range tc.ready {
				k.slots <- struct{}{}
				sb, err := b.Start(ctx, k.p, backends.StartOptions{})
				if err != nil {
					t.Fatal(err)
				}
				pooled = sb
				k.ready <- sb
			}
			before := b.Starts()
			sb, err := k.take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Starts() - before; got != tc.wantStarts {
				t.Errorf("take started %d sandboxes, want %d", got, tc.wantStarts)
			}
			for _, opts := range b.StartOptions()[before:] {
				if opts.DeferStaging {
					t.Error("the take's own start deferred its staged copy: nothing would take it")
				}
			}
			if pooled != nil && sb != pooled {
				t.Errorf("take handed out %s, not the ready %s", sb.ID(), pooled.ID())
			}
			if len(k.slots) != 1 {
				t.Errorf("%d slots taken, want 1 (the sandbox handed out)", len(k.slots))
			}
			k.discard(ctx, sb)
			k.drainPool(context.Background())
			if len(k.slots) != 0 {
				t.Errorf("%d slots still taken after the discard", len(k.slots))
			}
			closedAll(t, b)
		})
	}
}

// TestTakeStagesTheReadySandbox: a run sees the writable paths as they
// are when it takes a pooled sandbox (issue 22, finding 5): the fill
// starts sandboxes with their staged copy deferred and the take has it
// taken before it hands the sandbox out; one that cannot take it is
// removed, and its slot freed, not handed out.
func TestTakeStagesTheReadySandbox(t *testing.T) {
	tests := []struct {
		name      string
		stageErr  error
		hideStage bool // the sandbox is no Stager
		staged    bool // the policy stages writable paths
		wantErr   string
	}{
		{name: "staged at the take"},
		{name: "staging fails", stageErr: errors.New("too big"), wantErr: "too big"},
		{name: "no Stager, nothing staged", hideStage: true},
		{name: "no Stager, writable paths staged", hideStage: true, staged: true, wantErr: "cannot copy the writable paths"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := backendtest.New()
			b.NewSandbox = func(n int) *backendtest.Sandbox {
				return &backendtest.Sandbox{Name: fmt.Sprintf("fake-%d", n), StageErr: tc.stageErr}
			}
			k, ctx, _ := poolKeeper(t, b, 1)
			if tc.staged {
				k.p.Staging = policy.Staging{Size: 1 << 20, Inodes: 100}
				k.p.Mounts = []policy.Mount{{Path: "/w/repros", Kind: "dir"}}
			}
			k.slots <- struct{}{}
			started, err := b.Start(ctx, k.p, backends.StartOptions{DeferStaging: true})
			if err != nil {
				t.Fatal(err)
			}
			var pooled backends.Sandbox = started
			if tc.hideStage {
				pooled = struct{ backends.Sandbox }{started}
			}
			k.ready <- pooled
			sb, err := k.take(ctx)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || sb != nil {
					t.Fatalf("take = %v, %v; want the error %q", sb, err, tc.wantErr)
				}
				k.drainPool(context.Background())
				if len(k.slots) != 0 {
					t.Errorf("%d slots still taken after the refused take", len(k.slots))
				}
				closedAll(t, b)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sb != pooled {
				t.Fatalf("take handed out %s, not the ready %s", sb.ID(), pooled.ID())
			}
			want := []string{"stage"}
			if tc.hideStage {
				want = nil
			}
			if events, _, _ := started.(*backendtest.Sandbox).Record(); !slices.Equal(events, want) {
				t.Errorf("the taken sandbox was asked %v, want %v", events, want)
			}
			k.discard(ctx, sb)
			k.drainPool(context.Background())
			closedAll(t, b)
		})
	}
}

func TestTakeWaitsForASlotAndEndsWithItsContext(t *testing.T) {
	b := backendtest.New()
	k, ctx, _ := poolKeeper(t, b, 1)
	for range cap(k.slots) {
		k.slots <- struct{}{} // every sandbox the pool may have is out
	}
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if sb, err := k.take(ctx); !errors.Is(err, context.DeadlineExceeded) || sb != nil {
		t.Fatalf("take with no slot: %v %v", sb, err)
	}
	if b.Starts() != 0 {
		t.Errorf("%d starts beyond the pool's bound", b.Starts())
	}
}

func TestTakeHandsOutAStartedSandboxAndRefills(t *testing.T) {
	b := backendtest.New()
	k, ctx, _ := poolKeeper(t, b, 2)
	stop := startFill(ctx, k)
	defer stop()
	if !testenv.Eventually(5*time.Second, func() bool { return len(k.ready) == 2 }) {
		t.Fatalf("%d ready, want 2", len(k.ready))
	}
	sb, err := k.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fake, ok := sb.(*backendtest.Sandbox)
	if !ok || !slices.Contains(b.Started(), fake) || fake.Closes() != 0 {
		t.Fatalf("take handed out %v: not a started, open sandbox", sb)
	}
	// Another is ready: the refill waits for the taken one's end, so no
	// sandbox starts beside its command.
	time.Sleep(50 * time.Millisecond)
	if b.Starts() != 2 {
		t.Fatalf("%d starts while the taken sandbox runs and another is ready; want 2", b.Starts())
	}
	// Running its one command, then discarded: closed, and the pool
	// refilled then, to its size and no more.
	if _, err := sb.Exec(ctx, backends.Command{Argv: []string{"true"}}, backends.Streams{}); err != nil {
		t.Fatal(err)
	}
	k.discard(ctx, sb)
	if !testenv.Eventually(5*time.Second, func() bool { return fake.Closes() == 1 }) {
		t.Fatal("the used sandbox was not closed")
	}
	if !testenv.Eventually(5*time.Second, func() bool { return len(k.ready) == 2 && b.Starts() == 3 }) {
		t.Fatalf("the pool was not refilled: %d ready, %d starts", len(k.ready), b.Starts())
	}
	time.Sleep(50 * time.Millisecond)
	if b.Starts() != 3 {
		t.Errorf("%d starts; the full pool was overfilled", b.Starts())
	}
	// Taking the last two ready ones: the second take leaves none, and
	// the refill starts at once.
	var taken []backends.Sandbox
	for range 2 {
		sb, err := k.take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, sb)
	}
	if !testenv.Eventually(5*time.Second, func() bool { return b.Starts() >= 4 }) {
		t.Fatalf("an empty pool was not refilled at the take: %d starts", b.Starts())
	}
	for _, sb := range taken {
		k.discard(ctx, sb)
	}
	k.closing.Wait()
	stop()
	k.drainPool(context.Background())
	closedAll(t, b)
}

func TestIdle(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		active   int32
		lastUsed time.Duration // before now
		want     bool
	}{
		{"used just now", 0, 0, false},
		{"unused past the idle time", 0, 2 * time.Minute, true},
		{"attached, long unused", 1, 2 * time.Minute, false},
		{"unused within the idle time", 0, 30 * time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, _, _ := poolKeeper(t, backendtest.New(), 1) // idle: a minute
			k.active.Store(tc.active)
			k.lastUsed.Store(now.Add(-tc.lastUsed).UnixNano())
			if got := k.idle(now); got != tc.want {
				t.Errorf("idle = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUntilIdle: the expiry wakes when the idle time would be up (a
// millisecond past it: idle is strictly past), never sooner than a second.
func TestUntilIdle(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		lastUsed time.Duration // before now; the idle time is a minute
		want     time.Duration
	}{
		{"used just now", 0, time.Minute + time.Millisecond},
		{"used 20 s ago", 20 * time.Second, 40*time.Second + time.Millisecond},
		{"past the idle time (attached)", 2 * time.Minute, time.Second},
		{"nearly idle", time.Minute - 10*time.Millisecond, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, _, _ := poolKeeper(t, backendtest.New(), 1)
			k.lastUsed.Store(now.Add(-tc.lastUsed).UnixNano())
			if got := k.untilIdle(now); got != tc.want {
				t.Errorf("untilIdle = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDrainWaitsForEveryClose(t *testing.T) {
	b := backendtest.New()
	held := make(chan struct{})
	b.NewSandbox = func(n int) *backendtest.Sandbox {
		sb := &backendtest.Sandbox{Name: fmt.Sprintf("fake-%d", n)}
		if n == 1 { // the one taken: its removal is slow
			sb.CloseEntered, sb.CloseRelease = make(chan struct{}), held
		}
		return sb
	}
	k, ctx, cancel := poolKeeper(t, b, 2)
	sb, err := k.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stop := startFill(ctx, k)
	if !testenv.Eventually(5*time.Second, func() bool { return len(k.ready) == 2 }) {
		t.Fatalf("%d ready, want 2", len(k.ready))
	}
	k.discard(ctx, sb)
	<-sb.(*backendtest.Sandbox).CloseEntered
	cancel()
	stop()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		k.drainPool(context.Background())
	}()
	select {
	case <-drained:
		t.Fatal("drain returned while a removal was under way")
	case <-time.After(100 * time.Millisecond):
	}
	close(held)
	<-drained
	if len(k.ready) != 0 {
		t.Errorf("%d sandboxes still ready after the drain", len(k.ready))
	}
	closedAll(t, b)
}

// TestKeeperExpiresAndClosesEverything runs whole keepers (socket, record,
// expiry) on the fake: idle past their time they end by themselves, close
// every sandbox they started and remove their socket and record.
func TestKeeperExpiresAndClosesEverything(t *testing.T) {
	tests := []struct {
		name       string
		warm       policy.Warm
		wantStarts int
	}{
		{"session", policy.Warm{Session: "s", Idle: 10 * time.Millisecond}, 1},
		{"pool of 1", policy.Warm{Pool: 1, Idle: 10 * time.Millisecond}, 1},
		{"pool of 3", policy.Warm{Pool: 3, Idle: 10 * time.Millisecond}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortDir(t)
			b := backendtest.New()
			p := warmPolicy(tc.warm)
			if tc.warm.Pool > 0 {
				// The pool fills before the keeper expires.
				gate := make(chan struct{}, tc.wantStarts)
				for range tc.wantStarts {
					gate <- struct{}{}
				}
				b.StartGate = gate
			}
			done := make(chan error, 1)
			go func() {
				done <- Keep(context.Background(), KeeperOptions{Dir: dir, Policy: p, Backend: b, Log: io.Discard})
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the idle keeper did not end")
			}
			if b.Starts() < tc.wantStarts {
				t.Errorf("%d starts, want at least %d", b.Starts(), tc.wantStarts)
			}
			// The runs that attach here sweep nothing: the keeper sweeps
			// beside its own starts, and has ended its sweep when it ends.
			if b.Sweeps() == 0 {
				t.Error("the keeper started sandboxes without sweeping dead owners' leftovers")
			}
			closedAll(t, b)
			pp := paths{dir, key(p)}
			for _, f := range []string{pp.socket(), pp.record()} {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("%s is left: %v", f, err)
				}
			}
		})
	}
}

// TestKeeperClosesAStartFinishingAfterItsEnd: a pooled sandbox whose start
// was under way when the keeper ended is closed too.
func TestKeeperClosesAStartFinishingAfterItsEnd(t *testing.T) {
	b := backendtest.New()
	entered, release := make(chan struct{}), make(chan struct{})
	slow := &slowStart{Backend: b, entered: entered, release: release}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Keep(ctx, KeeperOptions{Dir: shortDir(t), Policy: warmPolicy(policy.Warm{Pool: 1, Idle: time.Hour}),
			Backend: slow, Log: io.Discard})
	}()
	<-entered
	cancel()
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.Starts() != 1 {
		t.Fatalf("%d starts, want 1", b.Starts())
	}
	closedAll(t, b)
}

// slowStart is a backend whose first start finishes only when released,
// whatever its context says.
type slowStart struct {
	*backendtest.Backend
	entered, release chan struct{}
	once             bool
}

func (s *slowStart) Start(_ context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	if !s.once {
		s.once = true
		close(s.entered)
		<-s.release
	}
	return s.Backend.Start(context.Background(), p, opts)
}

// shortDir is a directory for a keeper's socket: a socket's path is at
// most 108 bytes, more than t.TempDir may leave.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tsw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
