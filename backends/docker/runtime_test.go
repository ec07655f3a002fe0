package docker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// fakeInfo is a daemon's /info answer.
type fakeInfo struct {
	def   string
	err   error
	calls int
}

func (f *fakeInfo) Info(context.Context, client.InfoOptions) (client.SystemInfoResult, error) {
	f.calls++
	return client.SystemInfoResult{Info: system.Info{DefaultRuntime: f.def}}, f.err
}

// With no runtime configured the sandbox gets the daemon's default, and
// its traits (runsc: helpers start as root); a daemon that cannot say
// which it is refuses the start.
func TestResolveRuntime(t *testing.T) {
	for _, tt := range []struct {
		name    string
		d       fakeInfo
		want    string
		asRoot  bool
		wantErr string
	}{
		{"default runsc", fakeInfo{def: "runsc"}, "runsc", true, ""},
		{"default runc", fakeInfo{def: "runc"}, "runc", false, ""},
		{"daemon says none", fakeInfo{}, "", false, "does not say its default runtime"},
		{"daemon fails", fakeInfo{err: errors.New("boom")}, "", false, "boom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveRuntime(context.Background(), &tt.d)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "[sandbox] runtime") {
					t.Fatalf("got %q, %v; want an error with %q naming [sandbox] runtime", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
			if rt := runtimes.Of(got); rt.HelpersStartAsRoot != tt.asRoot {
				t.Fatalf("%s: helpers start as root %v, want %v", got, rt.HelpersStartAsRoot, tt.asRoot)
			}
		})
	}
}

// A configured runtime is kept without asking the daemon; an unconfigured
// one is the daemon's default, asked once, on a copy of the policy.
func TestWithRuntime(t *testing.T) {
	b := &Backend{} // no client: a configured runtime must not ask
	p := &policy.Policy{Runtime: "runc"}
	if got, err := b.withRuntime(context.Background(), p); err != nil || got != p {
		t.Fatalf("configured: %v, %v; want the policy itself", got, err)
	}
	b.runtime.name = "runsc" // resolved before
	p = &policy.Policy{}
	got, err := b.withRuntime(context.Background(), p)
	if err != nil || got.Runtime != "runsc" || p.Runtime != "" {
		t.Fatalf("default: %+v, %v (caller's runtime %q); want runsc on a copy", got.Runtime, err, p.Runtime)
	}
}

// A container may start under a default runtime of another name than the
// one its sandbox was rendered for only when the two want the same
// sandbox.
func TestSameTraits(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"runc", "runc", true},
		{"runc", "crun", true},
		{"runc", "io.containerd.runc.v2", true},
		{"runc", "runsc", false},
		{"runsc", "/usr/bin/runsc", true},
		{"", "runsc", false},
	} {
		if got := sameTraits(runtimes.Of(tt.a), runtimes.Of(tt.b)); got != tt.want {
			t.Errorf("sameTraits(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
