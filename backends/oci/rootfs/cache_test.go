package rootfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func fakeID(c string) string { return "sha256:" + strings.Repeat(c, 64) }

// fakeUnpack stands in for the daemon: it counts calls and writes one file.
func fakeUnpack(calls *atomic.Int32, delay time.Duration) unpackFunc {
	return func(ctx context.Context, dst string) (Entry, error) {
		calls.Add(1)
		time.Sleep(delay)
		return Entry{Source: "test"}, os.WriteFile(filepath.Join(dst, "hello"), []byte("hi"), 0o644)
	}
}

func TestDefaultDir(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cases := []struct {
		euid int
		env  map[string]string
		want string
	}{
		{0, map[string]string{"XDG_CACHE_HOME": "/home/u/.cache"}, "/var/cache/triage-sandbox/rootfs"},
		{1000, map[string]string{"XDG_CACHE_HOME": "/xdg"}, "/xdg/triage-sandbox/rootfs"},
		{1000, map[string]string{"XDG_CACHE_HOME": "relative"}, "/home/u/.cache/triage-sandbox/rootfs"},
		{1000, nil, "/home/u/.cache/triage-sandbox/rootfs"},
	}
	for _, tc := range cases {
		if got := defaultDir(tc.euid, "/home/u", env(tc.env)); got != tc.want {
			t.Errorf("euid %d env %v: %s, want %s", tc.euid, tc.env, got, tc.want)
		}
	}
}

func TestAcquireReusesAndLeases(t *testing.T) {
	c := &Cache{Dir: filepath.Join(t.TempDir(), "cache")}
	ctx := context.Background()
	var calls atomic.Int32
	l, err := c.acquire(ctx, "img", fakeID("a"), fakeUnpack(&calls, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !l.Unpacked || l.ID != fakeID("a") || !filepath.IsAbs(l.Root) {
		t.Errorf("first lease %+v", l)
	}
	if b, err := os.ReadFile(filepath.Join(l.Root, "hello")); err != nil || string(b) != "hi" {
		t.Errorf("root content %q %v", b, err)
	}
	if l.Entry.Image != "img" || l.Entry.ID != fakeID("a") || l.Entry.UnpackedAt.IsZero() {
		t.Errorf("marker %+v", l.Entry)
	}
	if st, _ := os.Stat(filepath.Dir(l.Root)); st.Mode().Perm() != 0o700 {
		t.Errorf("entry directory mode %v, want 0700", st.Mode())
	}
	l.Close()
	l.Close() // idempotent
	l2, err := c.acquire(ctx, "img", fakeID("a"), fakeUnpack(&calls, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.Unpacked || calls.Load() != 1 || l2.Root != l.Root {
		t.Errorf("second use unpacked again (calls %d, lease %+v)", calls.Load(), l2)
	}
	if l3, err := c.AcquireID(ctx, fakeID("a")); err != nil || l3.Root != l.Root {
		t.Errorf("AcquireID: %v", err)
	} else {
		l3.Close()
	}
	if _, err := c.AcquireID(ctx, fakeID("b")); !errors.Is(err, ErrNotCached) {
		t.Errorf("AcquireID of an absent image: %v", err)
	}
	if _, err := c.AcquireID(ctx, "latest"); err == nil {
		t.Error("accepted a non-ID")
	}
}

func TestAcquireRedoesDebris(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	h := strings.Repeat("c", 64)
	junk := filepath.Join(c.Dir, h, "rootfs", "junk")
	tmp := filepath.Join(c.Dir, h+".tmp-123", "rootfs", "half")
	for _, p := range []string{junk, tmp} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	os.Chmod(filepath.Dir(junk), 0o555) // images have read-only dirs
	var calls atomic.Int32
	l, err := c.acquire(context.Background(), "img", fakeID("c"), fakeUnpack(&calls, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Unpacked || calls.Load() != 1 {
		t.Error("an entry without a marker was reused")
	}
	if _, err := os.Stat(filepath.Join(l.Root, "junk")); err == nil {
		t.Error("debris survived")
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(tmp))); err == nil {
		t.Error("a crashed unpack's temporary directory survived")
	}
}

func TestAcquireFailureLeavesNothing(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	_, err := c.acquire(context.Background(), "img", fakeID("d"), func(ctx context.Context, dst string) (Entry, error) {
		os.WriteFile(filepath.Join(dst, "partial"), nil, 0o644)
		return Entry{}, errors.New("boom")
	})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("error %v", err)
	}
	names, _ := os.ReadDir(c.Dir)
	if len(names) != 1 || !strings.HasSuffix(names[0].Name(), ".lock") {
		t.Errorf("cache holds %v after a failed unpack", names)
	}
}

func TestPrepareRefusesSharedDir(t *testing.T) {
	d := t.TempDir()
	os.Chmod(d, 0o777)
	c := &Cache{Dir: d}
	if _, err := c.Ensure(context.Background(), nil, "x"); err == nil {
		t.Fatal("no error without a client")
	}
	if _, err := c.acquire(context.Background(), "img", fakeID("e"), fakeUnpack(new(atomic.Int32), 0)); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Fatalf("world-writable cache accepted: %v", err)
	}
}

// A cache below a directory other users can write, or a symlink to one,
// is refused (issue 22, #3's class): a root there could be swapped.
func TestPrepareRefusesCacheOthersCanReplace(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	own := t.TempDir()
	if err := os.Symlink(own, filepath.Join(shared, "link")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(shared, "cache"), filepath.Join(shared, "link")} {
		if _, err := (&Cache{Dir: dir}).prepare(); err == nil || !strings.Contains(err.Error(), shared) {
			t.Errorf("%s: accepted: %v", dir, err)
		}
	}
	if _, err := (&Cache{Dir: filepath.Join(own, "cache")}).prepare(); err != nil {
		t.Errorf("the caller's own cache: %v", err)
	}
}

func TestEnsureWithoutDaemon(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	_, err := c.Ensure(context.Background(), nil, "triage-sandbox:latest")
	if err == nil || !strings.Contains(err.Error(), "needs the Docker daemon") || !strings.Contains(err.Error(), "triage-sandbox image build") {
		t.Fatalf("error %v", err)
	}
}

func TestConcurrentAcquireUnpacksOnce(t *testing.T) {
	dir := t.TempDir()
	var calls atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			c := &Cache{Dir: dir} // separate values: nothing shared but the directory
			l, err := c.acquire(context.Background(), "img", fakeID("f"), fakeUnpack(&calls, 100*time.Millisecond))
			if err == nil {
				err = l.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d unpacks, want 1", n)
	}
}

func TestEvictRespectsLeases(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	ctx := context.Background()
	var calls atomic.Int32
	acquire := func(id string) *Lease {
		t.Helper()
		l, err := c.acquire(ctx, "img", id, fakeUnpack(&calls, 0))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	inUse := acquire(fakeID("1"))
	acquire(fakeID("2")).Close()
	acquire(fakeID("3")).Close()
	// Debris of a crashed unpack (no one holds its lock) and a marker-less entry.
	os.MkdirAll(filepath.Join(c.Dir, strings.Repeat("4", 64)+".tmp-9", "rootfs"), 0o755)
	os.MkdirAll(filepath.Join(c.Dir, strings.Repeat("5", 64), "rootfs"), 0o755)
	os.WriteFile(filepath.Join(c.Dir, "unrelated"), nil, 0o644)

	removed, err := c.Evict(ctx, []string{strings.Repeat("3", 64)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fakeID("2"), fakeID("5")}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if _, err := os.Stat(filepath.Join(inUse.Root, "hello")); err != nil {
		t.Errorf("a leased root was evicted: %v", err)
	}
	for _, gone := range []string{strings.Repeat("2", 64), strings.Repeat("2", 64) + ".lock", strings.Repeat("4", 64) + ".tmp-9", strings.Repeat("5", 64)} {
		if _, err := os.Lstat(filepath.Join(c.Dir, gone)); err == nil {
			t.Errorf("%s survived", gone)
		}
	}
	if l, err := c.AcquireID(ctx, fakeID("3")); err != nil {
		t.Errorf("a kept root was evicted: %v", err)
	} else {
		l.Close()
	}
	inUse.Close()
	removed, err = c.Evict(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fakeID("1"), fakeID("3")}; !slices.Equal(removed, want) {
		t.Errorf("after release removed %v, want %v", removed, want)
	}
	names, _ := os.ReadDir(c.Dir)
	if len(names) != 1 || names[0].Name() != "unrelated" {
		t.Errorf("cache holds %v", names)
	}
	// An evicted image comes back on next use.
	if l := acquire(fakeID("1")); !l.Unpacked {
		t.Error("evicted root not unpacked again")
	} else {
		l.Close()
	}
}

// A lock file that Evict unlinked while someone waited on it must not
// give that waiter a lock nobody else sees.
func TestLockSurvivesUnlink(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "x.lock")
	held, err := lockFile(ctx, p, unix.LOCK_EX, true)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		f, err := lockFile(ctx, p, unix.LOCK_EX, true)
		if err == nil {
			defer f.Close()
			// The path must now name the file we hold.
			if _, err2 := lockFile(ctx, p, unix.LOCK_EX, false); err2 == nil {
				err = errors.New("two exclusive holders")
			}
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	os.Remove(p)
	held.Close()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter never got the lock")
	}
	ctx2, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	f, _ := lockFile(ctx, p, unix.LOCK_EX, true)
	defer f.Close()
	if _, err := lockFile(ctx2, p, unix.LOCK_SH, true); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting past the context: %v", err)
	}
}

// A caller waiting for the exclusive lock (it saw no marker) while another
// finished the root and holds it leased must stop waiting once the marker
// is there, not wait for the lease to end (it may last as long as a run).
func TestExclusiveWaitEndsWhenDone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	held, err := lockFile(context.Background(), path, unix.LOCK_SH, true)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var done atomic.Bool
	go func() { time.Sleep(50 * time.Millisecond); done.Store(true) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	f, err := lockFileUnless(ctx, path, unix.LOCK_EX, done.Load)
	if f != nil {
		f.Close()
	}
	if !errors.Is(err, errDone) {
		t.Fatalf("err = %v after %s, want errDone", err, time.Since(start))
	}
}
