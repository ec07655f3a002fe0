package oci_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/oci"
	"github.com/triage-sandbox/triage-sandbox/backends/oci/rootfs"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// trackedRoots is the real image cache, counting its open leases; the
// root ID stale stands for a root the image no longer names (it leases
// the current root's directory under that ID), and daemonDown fails every
// question to the daemon.
type trackedRoots struct {
	*oci.CachedRoots
	stale      string
	daemonDown bool

	// state is the backend's state directory: asked notes whether the
	// daemon was first asked before or after a bundle's config.json (the
	// last thing before the runtime's spawn) was written there.
	state string

	mu    sync.Mutex
	open  map[string]int // by ID
	ofIDs []string
	asked string // "before" or "after" the bundle's config.json, at the first question
}

func (r *trackedRoots) track(id string, release func()) func() {
	r.mu.Lock()
	if r.open == nil {
		r.open = map[string]int{}
	}
	r.open[id]++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			release()
			r.mu.Lock()
			r.open[id]--
			r.mu.Unlock()
		})
	}
}

func (r *trackedRoots) RootWithID(ctx context.Context, image string) (string, string, func(), error) {
	configs, _ := filepath.Glob(filepath.Join(r.state, "bundles", "*", "config.json"))
	r.mu.Lock()
	if r.asked == "" {
		r.asked = map[bool]string{false: "before", true: "after"}[len(configs) > 0]
	}
	r.mu.Unlock()
	if r.daemonDown {
		return "", "", nil, errors.New("the daemon is down (test)")
	}
	path, id, release, err := r.CachedRoots.RootWithID(ctx, image)
	if err != nil {
		return "", "", nil, err
	}
	return path, id, r.track(id, release), nil
}

func (r *trackedRoots) RootOfID(ctx context.Context, id string) (string, func(), error) {
	r.mu.Lock()
	r.ofIDs = append(r.ofIDs, id)
	r.mu.Unlock()
	if id == r.stale {
		path, _, release, err := r.CachedRoots.RootWithID(ctx, "triage-sandbox:latest")
		if err != nil {
			return "", nil, err
		}
		return path, r.track(id, release), nil
	}
	path, release, err := r.CachedRoots.RootOfID(ctx, id)
	if err != nil {
		return "", nil, err
	}
	return path, r.track(id, release), nil
}

// openLeases is how many leases are open: "ID:n" for each ID with any.
func (r *trackedRoots) openLeases() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for id, n := range r.open {
		if n != 0 {
			out = append(out, fmt.Sprintf("%s:%d", id, n))
		}
	}
	return strings.Join(out, ",")
}

// A start begins on the root the image had last time, asks the daemon
// beside it (once the bundle is written, just before the runtime's spawn;
// at once when no root is remembered or the remembered one is gone from
// the cache), and returns only a sandbox on the root the image names now:
// a remembered root that is still current, one the image moved away from
// (started again on the current one), one no longer in the cache, none
// remembered, and a daemon that does not answer (no sandbox). Every lease
// ends with the sandbox, and nothing is left in the state directory.
func TestStartOnTheRememberedRoot(t *testing.T) {
	newBackend(t) // skips where the backend cannot run
	p, _ := workspacePolicy(t, profiles.RoleReproducer)
	image := p.Base.Image
	cache := &oci.CachedRoots{Cache: rootfs.Cache{Dir: rootfs.DefaultDir("/root", os.LookupEnv)}}
	_, current, release, err := cache.RootWithID(context.Background(), image)
	if err != nil {
		t.Fatal(err)
	}
	release()
	const stale = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	const gone = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	for _, tc := range []struct {
		name       string
		remembered string
		daemonDown bool
		wantOfIDs  []string
		wantAsked  string
		wantErr    string
	}{
		{name: "current", remembered: current, wantOfIDs: []string{current}, wantAsked: "after"},
		{name: "moved on", remembered: stale, wantOfIDs: []string{stale}, wantAsked: "after"},
		{name: "gone from the cache", remembered: gone, wantOfIDs: []string{gone}, wantAsked: "before"},
		{name: "none", wantAsked: "before"},
		{name: "daemon down", remembered: current, daemonDown: true, wantOfIDs: []string{current}, wantAsked: "after", wantErr: "the daemon is down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "oci")
			roots := &trackedRoots{CachedRoots: cache, stale: stale, daemonDown: tc.daemonDown, state: state}
			b, err := oci.New(backends.Env{SelfExe: testenv.Binary(t)}, roots)
			if err != nil {
				t.Fatal(err)
			}
			b.SetStateDir(state)
			if tc.remembered != "" {
				if err := os.MkdirAll(filepath.Dir(b.RootIDFile(image)), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(b.RootIDFile(image), []byte(tc.remembered+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			sb, err := b.Start(context.Background(), p, backends.StartOptions{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("start: %v, want %q", err, tc.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				// Only the sandbox's own lease is open while it runs, on
				// the image's current root: a sandbox on the stale one is
				// gone before Start returns.
				if open := roots.openLeases(); open != current+":1" {
					t.Errorf("leases open while the sandbox runs: %s, want %s:1", open, current)
				}
				var out testenv.Buffer
				res, err := sb.Exec(context.Background(), backends.Command{Argv: []string{"sh", "-c", "echo ran"}}, backends.Streams{Stdout: &out, Stderr: &out})
				if err != nil || res.ExitCode != 0 || out.String() != "ran\n" {
					t.Errorf("exec: %+v %v %q", res, err, out.String())
				}
				if err := sb.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(b.RootIDFile(image)); strings.TrimSpace(string(got)) != current {
					t.Errorf("remembered %q, want %q", got, current)
				}
			}
			if open := roots.openLeases(); open != "" {
				t.Errorf("leases still open: %s", open)
			}
			if strings.Join(roots.ofIDs, ",") != strings.Join(tc.wantOfIDs, ",") {
				t.Errorf("leased by ID %v, want %v", roots.ofIDs, tc.wantOfIDs)
			}
			if roots.asked != tc.wantAsked {
				t.Errorf("the daemon was first asked %q the bundle's config.json, want %q", roots.asked, tc.wantAsked)
			}
			for _, d := range []string{"bundles", "runtime"} {
				if ents, _ := os.ReadDir(filepath.Join(state, d)); len(ents) != 0 {
					t.Errorf("%s left: %v", d, ents)
				}
			}
		})
	}
}
