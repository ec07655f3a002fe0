package docker_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// creates records the create requests a Backend sends.
type creates struct {
	mu   sync.Mutex
	reqs []docker.CreateRequest
}

func (c *creates) record(b *docker.Backend) {
	b.Adjust = func(r *docker.CreateRequest) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.reqs = append(c.reqs, *r)
	}
}

func (c *creates) all() []docker.CreateRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reqs)
}

// startedSince counts the daemon's start events for the container called
// name since then.
func startedSince(t *testing.T, cli *client.Client, name string, since time.Time) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := cli.Events(ctx, client.EventsListOptions{
		Since:   strconv.FormatInt(since.Add(-time.Second).Unix(), 10),
		Until:   strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10),
		Filters: make(client.Filters).Add("container", name).Add("event", "start"),
	})
	n := 0
	for {
		select {
		case <-ev.Messages:
			n++
		case err := <-ev.Err:
			if !errors.Is(err, io.EOF) {
				t.Fatalf("events of %s: %v", name, err)
			}
			return n
		}
	}
}

func assertNameGone(t *testing.T, cli *client.Client, name string) {
	t.Helper()
	_, err := cli.ContainerInspect(context.Background(), name, client.ContainerInspectOptions{})
	if !cerrdefs.IsNotFound(err) {
		t.Fatalf("container %s still there (inspect: %v)", name, err)
	}
}

// A first start on Docker renders its sandbox for runc's traits, lets the
// daemon give the container its default runtime and asks the created
// container which it got. When that runtime wants another sandbox (here:
// the guess is made to be runsc's traits), the container is removed
// without ever starting and the sandbox is built again for the runtime
// the daemon gave, named: the command runs under it, nothing else.
func TestStartWrongRuntimeGuessIsNeverStarted(t *testing.T) {
	testenv.RequireDocker(t)
	bk, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b := bk.(*docker.Backend)
	info, err := b.Client().Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def := info.Info.DefaultRuntime
	guess := "runsc"
	if def == guess || strings.HasSuffix(def, "/runsc") {
		guess = "runc"
	}
	docker.SetGuess(b, guess)
	var seen creates
	seen.record(b)
	f := newFixture(t)
	p := build(t, f, "agent", currentHost(t))
	since := time.Now()
	res, err := sandbox.Run(context.Background(), b, sandbox.Request{
		Policy: p, Command: backends.Command{Argv: []string{"true"}},
		Streams: backends.Streams{Stdout: io.Discard, Stderr: io.Discard},
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: exit %d, %v", res.ExitCode, err)
	}
	reqs := seen.all()
	if len(reqs) != 2 || reqs[0].HostConfig.Runtime != "" || reqs[1].HostConfig.Runtime != def {
		var got []string
		for _, r := range reqs {
			got = append(got, r.HostConfig.Runtime)
		}
		t.Fatalf("created for runtimes %q, want [\"\" %s]", got, def)
	}
	cli := b.Client()
	assertGone(t, cli, res.Sandbox)
	assertNameGone(t, cli, reqs[0].Name)
	if n := startedSince(t, cli, reqs[0].Name, since); n != 0 {
		t.Fatalf("the container built for the wrong runtime was started %d time(s)", n)
	}
	if n := startedSince(t, cli, reqs[1].Name, since); n != 1 {
		t.Fatalf("the sandbox's container started %d time(s), want 1 (the events check must see it)", n)
	}
}

// inspectFailing is a proxy in front of the real daemon that fails every
// container inspect: a daemon that cannot say which runtime a container
// got.
func inspectFailing(t *testing.T) string {
	t.Helper()
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		u, err := url.Parse(h)
		if err != nil || u.Scheme != "unix" {
			t.Skipf("DOCKER_HOST %q is not a unix socket this test can stand in front of", h)
		}
		target = u.Path
	}
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", target)
		}},
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if inspectPath.MatchString(r.URL.Path) {
			http.Error(w, `{"message":"inspect refused by the test"}`, http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "unix://" + sock
}

var inspectPath = regexp.MustCompile(`/containers/[^/]+/json$`)

// A daemon that cannot say which runtime the container got refuses the
// start, and the container is removed without ever starting.
func TestStartRefusedWhenTheRuntimeIsNotSaid(t *testing.T) {
	testenv.RequireDocker(t)
	// The test's own questions go to the daemon itself.
	direct, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", inspectFailing(t))
	bk, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	refusedUnstarted(t, bk.(*docker.Backend), direct,
		"asking the Docker daemon which runtime the sandbox's container got", "the daemon never said its runtime")
}

// refusedUnstarted runs `true` once on b and fails unless the start was
// refused with want in its error after exactly one create, whose container
// is gone and was never started (cli asks the daemon: why says what was
// missing).
func refusedUnstarted(t *testing.T, b *docker.Backend, cli *client.Client, want, why string) {
	t.Helper()
	var seen creates
	seen.record(b)
	f := newFixture(t)
	p := build(t, f, "agent", currentHost(t))
	since := time.Now()
	_, err := sandbox.Run(context.Background(), b, sandbox.Request{
		Policy: p, Command: backends.Command{Argv: []string{"true"}},
		Streams: backends.Streams{Stdout: io.Discard, Stderr: io.Discard},
	})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("run: %v; want the start refused: %s", err, want)
	}
	reqs := seen.all()
	if len(reqs) != 1 {
		t.Fatalf("%d create request(s), want 1", len(reqs))
	}
	assertNameGone(t, cli, reqs[0].Name)
	if n := startedSince(t, cli, reqs[0].Name, since); n != 0 {
		t.Fatalf("the container was started %d time(s) though %s", n, why)
	}
}

// On a daemon whose default runtime has another name than the guess but
// the same traits, the first start's container runs under that default,
// created with none named, and the sandbox names it from then on.
func TestStartUnderADefaultOfAnotherName(t *testing.T) {
	const def = "io.containerd.runc.v2"
	d := testenv.StartDaemon(t, profiles.DefaultBaseImage, "--default-runtime", def)
	t.Setenv("DOCKER_HOST", d.Host)
	bk, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b := bk.(*docker.Backend)
	var seen creates
	seen.record(b)
	f := newFixture(t)
	image := d.Image
	f.cfg.Sandbox.Image = &image
	p := build(t, f, "agent", currentHost(t))
	for i := range 2 {
		res, err := sandbox.Run(context.Background(), b, sandbox.Request{
			Policy: p, Command: backends.Command{Argv: []string{"true"}},
			Streams: backends.Streams{Stdout: io.Discard, Stderr: io.Discard},
		})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run %d: exit %d, %v", i, res.ExitCode, err)
		}
		assertGone(t, b.Client(), res.Sandbox)
	}
	reqs := seen.all()
	if len(reqs) != 2 || reqs[0].HostConfig.Runtime != "" || reqs[1].HostConfig.Runtime != def {
		var got []string
		for _, r := range reqs {
			got = append(got, r.HostConfig.Runtime)
		}
		t.Fatalf("created for runtimes %q, want [\"\" %s] (the first lets the daemon choose, the second names its choice)", got, def)
	}
}

// The container is listed with its watcher beside the attach, not before,
// but nothing runs in the container before the watcher does: a watcher
// that cannot start (here the binary it runs is not executable; the same
// file is mounted as the holder, which never gets to run) fails the start,
// and the container is removed without ever starting.
func TestStartRefusedWithoutItsWatcher(t *testing.T) {
	testenv.RequireDocker(t)
	inside := filepath.Join(t.TempDir(), "triage-sandbox-inside")
	src, err := os.ReadFile(testenv.InsideBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(inside), 0o755); err != nil {
		t.Fatal(err)
	}
	bk, err := docker.New(backends.Env{SelfExe: testenv.Binary(t), InsideExe: inside})
	if err != nil {
		t.Fatal(err)
	}
	b := bk.(*docker.Backend)
	refusedUnstarted(t, b, b.Client(), "starting the containers' watcher", "its watcher never ran")
}
