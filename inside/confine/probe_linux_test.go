package confine

import (
	"encoding/json"
	"testing"
)

func TestProbe(t *testing.T) {
	s := Probe()
	b, _ := json.MarshalIndent(s, "", "  ")
	t.Logf("%s", b)
	if !s.UserNS.Available {
		t.Errorf("user namespaces: %s", s.UserNS.Detail)
	}
	if !s.Landlock.Available || s.LandlockABI < 1 {
		t.Errorf("landlock: ABI %d, %s", s.LandlockABI, s.Landlock.Detail)
	}
	if !s.Seccomp.Available {
		t.Errorf("seccomp: %s", s.Seccomp.Detail)
	}
	for name, l := range map[string]Layer{"userns": s.UserNS, "unpriv": s.UnprivilegedUserNS,
		"landlock": s.Landlock, "seccomp": s.Seccomp, "cgroup": s.Cgroup} {
		if !l.Available && l.Cost == "" {
			t.Errorf("%s is missing but says nothing of what that costs", name)
		}
		if l.Detail == "" {
			t.Errorf("%s has no detail", name)
		}
	}
}

func TestLandlockABIBelowMinimumRefused(t *testing.T) {
	abi, err := landlockABI(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := landlockABI(abi + 1); err == nil {
		t.Errorf("ABI %d accepted for a plan requiring %d", abi, abi+1)
	}
}
