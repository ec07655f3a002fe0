package builtin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
)

// TestRegistry: every backend this module ships is registered with a
// summary for help texts, and the capabilities a policy is built with
// before the backend exists are the ones the made backend declares.
func TestRegistry(t *testing.T) {
	r := builtin.Registry()
	for _, want := range []string{"docker", "oci", "seatbelt", "local"} {
		if !slices.Contains(r.Names(), want) {
			t.Errorf("Names() = %v, lacks %s", r.Names(), want)
		}
	}
	for _, name := range r.Names() {
		t.Run(name, func(t *testing.T) {
			if r.Summary(name) == "" {
				t.Error("no summary for help texts")
			}
			caps, ok := r.Capabilities(name)
			if !ok || len(caps) == 0 {
				t.Fatalf("Capabilities(%q) = %v, %v", name, caps, ok)
			}
			// Making a backend touches nothing (no daemon, no runtime).
			b, err := r.New(name, backends.Env{SelfExe: "/usr/local/bin/triage-sandbox"})
			if bin, how := r.Elsewhere(name); bin != "" {
				if how == "" {
					t.Errorf("compiled into %s, with no word on how to get it", bin)
				}
				// Declared only: making it refuses, naming the binary that has it.
				if err == nil || !strings.Contains(err.Error(), bin) {
					t.Fatalf("New(%q) in a binary without it = %v, want a refusal naming %s", name, err, bin)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Name() != name {
				t.Errorf("made backend is named %q", b.Name())
			}
			if !slices.Equal(b.Capabilities(), caps) {
				t.Errorf("registered capabilities %v, the backend declares %v", caps, b.Capabilities())
			}
		})
	}
}

// TestRegistryIsFresh: each call returns its own registry, so a caller
// that registers a fake changes nobody else's.
func TestRegistryIsFresh(t *testing.T) {
	a := builtin.Registry()
	a.Register(backends.Entry{Name: "fake"})
	if slices.Contains(builtin.Registry().Names(), "fake") {
		t.Error("a registration leaked into the next registry")
	}
}
