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

func TestCgroupParsing(t *testing.T) {
	mountinfo := `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`
	m := cgroupMounts(mountinfo)
	if len(m["cgroup"]) != 2 || len(m["cgroup2"]) != 1 || m["cgroup2"][0].point != "/sys/fs/cgroup/unified" {
		t.Errorf("cgroupMounts = %+v", m)
	}
	own := ownCgroups("12:pids:/docker/x\n11:cpu,cpuacct:/y\n0::/init.scope\n")
	if own["pids"] != "/docker/x" || own["cpuacct"] != "/y" || own[""] != "/init.scope" {
		t.Errorf("ownCgroups = %v", own)
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
