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

// A first start creates its container while /info says the daemon's
// default runtime. When the guess was wrong, that container is removed
// without ever starting and the sandbox is built again for the default:
// the command runs under the runtime the daemon named, nothing else.
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
	var others []string
	for name := range info.Info.Runtimes {
		if name != def && name != "runsc" {
			others = append(others, name)
		}
	}
	if len(others) == 0 {
		t.Skipf("the daemon knows no runtime besides its default %q and runsc to guess wrongly", def)
	}
	slices.Sort(others)
	docker.SetGuess(b, others[0])
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
	if len(reqs) != 2 || reqs[0].HostConfig.Runtime != others[0] || reqs[1].HostConfig.Runtime != def {
		var got []string
		for _, r := range reqs {
			got = append(got, r.HostConfig.Runtime)
		}
		t.Fatalf("created for runtimes %q, want [%s %s]", got, others[0], def)
	}
	cli := b.Client()
	assertGone(t, cli, res.Sandbox)
	assertNameGone(t, cli, reqs[0].Name)
	if n := startedSince(t, cli, reqs[0].Name, since); n != 0 {
		t.Fatalf("the container created for the wrong runtime was started %d time(s)", n)
	}
	if n := startedSince(t, cli, reqs[1].Name, since); n != 1 {
		t.Fatalf("the sandbox's container started %d time(s), want 1 (the events check must see it)", n)
	}
}

// infoFailing is a proxy in front of the real daemon that fails every
// /info: a daemon that cannot say its default runtime.
func infoFailing(t *testing.T) string {
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
		if strings.HasSuffix(r.URL.Path, "/info") {
			http.Error(w, `{"message":"info refused by the test"}`, http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "unix://" + sock
}

// A daemon that cannot say its default runtime refuses the start, and the
// container created while it was asked is removed without ever starting.
func TestStartRefusedWhenInfoFails(t *testing.T) {
	testenv.RequireDocker(t)
	t.Setenv("DOCKER_HOST", infoFailing(t))
	bk, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b := bk.(*docker.Backend)
	var seen creates
	seen.record(b)
	f := newFixture(t)
	p := build(t, f, "agent", currentHost(t))
	since := time.Now()
	_, err = sandbox.Run(context.Background(), b, sandbox.Request{
		Policy: p, Command: backends.Command{Argv: []string{"true"}},
		Streams: backends.Streams{Stdout: io.Discard, Stderr: io.Discard},
	})
	if err == nil || !strings.Contains(err.Error(), "asking the Docker daemon for its default runtime") {
		t.Fatalf("run: %v; want the start refused for want of the default runtime", err)
	}
	reqs := seen.all()
	if len(reqs) != 1 {
		t.Fatalf("%d create request(s), want 1 (created beside /info)", len(reqs))
	}
	cli := b.Client()
	assertNameGone(t, cli, reqs[0].Name)
	if n := startedSince(t, cli, reqs[0].Name, since); n != 0 {
		t.Fatalf("the container was started %d time(s) though the daemon never said its default runtime", n)
	}
}
