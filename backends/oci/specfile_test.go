package oci

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestConfigJSONIsTheSpec: the config.json a start writes (the filter as
// JSON, specFile's fields) is the spec BundleHold renders, seccomp filter
// and all, for each role and runtime: nothing lost to the narrower types,
// the filter the one moby/profiles' loader resolves here.
func TestConfigJSONIsTheSpec(t *testing.T) {
	for _, role := range []profiles.Role{profiles.RoleReproducer, profiles.RoleAgent} {
		for _, rt := range []string{"runc", "crun", "runsc"} {
			p := buildPolicy(t, role, "")
			b := &Backend{selfExe: selfExe, stateDir: t.TempDir()}
			traits := traitsFor(rt, p)
			bs, err := b.renderSpec(context.Background(), p, "/nonexistent/"+rt, traits, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := writtenSpec(t, bs)
			// What BundleHold renders, with the same runtime changes.
			hold := HoldSpec(p, time.Minute)
			if traits.PassesFDs {
				hold.ControlFD = 3
			}
			if hold.RunAs, err = launch.RunAs(p, traits.HelpersStartAsRoot); err != nil {
				t.Fatal(err)
			}
			want, err := BundleHold(p, selfExe, hold)
			if err != nil {
				t.Fatal(err)
			}
			want.Version = bs.Version
			adaptToRuntime(want.Process, want.Linux.Resources, traits, p)
			if got.Linux.Seccomp == nil {
				t.Fatalf("%s/%s: config.json has no seccomp filter", role, rt)
			}
			if !reflect.DeepEqual(got.Linux.Seccomp, want.Linux.Seccomp) {
				t.Errorf("%s/%s: the filter written is not the loader's", role, rt)
			}
			gb, _ := json.Marshal(&got)
			wb, _ := json.Marshal(want)
			if string(gb) != string(wb) {
				t.Errorf("%s/%s: config.json differs from BundleHold's spec:\n got %.400s\nwant %.400s", role, rt, gb, wb)
			}
		}
	}
}

// TestConfigJSONRefusesAFilterInDoubt: no config.json without the filter,
// nor with a second filter the JSON one would hide.
func TestConfigJSONRefusesAFilterInDoubt(t *testing.T) {
	p := buildPolicy(t, profiles.RoleReproducer, "")
	b := &Backend{selfExe: selfExe, stateDir: t.TempDir()}
	for name, spoil := range map[string]func(*bundleSpec){
		"no filter":     func(s *bundleSpec) { s.filter = nil },
		"a second one":  func(s *bundleSpec) { s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActAllow} },
		"no linux part": func(s *bundleSpec) { s.Linux = nil },
	} {
		bs, err := b.renderSpec(context.Background(), p, "/nonexistent/runc", runtimes.Of("runc"), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		spoil(bs)
		if raw, err := specJSON(bs); err == nil {
			t.Errorf("%s: written: %.200s", name, raw)
		}
	}
}

// TestConfigJSONKeepsOtherFields: a spec that sets a field specFile does
// not have is written whole, filter included.
func TestConfigJSONKeepsOtherFields(t *testing.T) {
	p := buildPolicy(t, profiles.RoleReproducer, "")
	b := &Backend{selfExe: selfExe, stateDir: t.TempDir()}
	bs, err := b.renderSpec(context.Background(), p, "/nonexistent/runc", runtimes.Of("runc"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	bs.Domainname = "example.internal"
	bs.Hooks = &specs.Hooks{Poststop: []specs.Hook{{Path: "/bin/true"}}}
	got, raw := writtenSpec(t, bs)
	if got.Domainname != bs.Domainname || got.Hooks == nil || got.Linux.Seccomp == nil || !strings.Contains(string(raw), `"defaultAction"`) {
		t.Errorf("fields or filter lost: %.300s", raw)
	}
}

// writtenSpec is what config.json holds for bs, read back as a spec, and
// its bytes.
func writtenSpec(t *testing.T, bs *bundleSpec) (specs.Spec, []byte) {
	t.Helper()
	raw, err := specJSON(bs)
	if err != nil {
		t.Fatal(err)
	}
	var got specs.Spec
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	return got, raw
}
