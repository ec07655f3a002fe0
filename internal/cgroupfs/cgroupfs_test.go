package cgroupfs

import "testing"

const hybrid = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`

func TestParsing(t *testing.T) {
	m := Mounts(hybrid)
	if len(m["cgroup"]) != 2 || len(m["cgroup2"]) != 1 || m["cgroup2"][0].Point != "/sys/fs/cgroup/unified" {
		t.Errorf("Mounts = %+v", m)
	}
	own := Paths("12:pids:/docker/x\n11:cpu,cpuacct:/y\n0::/init.scope\n")
	if own["pids"] != "/docker/x" || own["cpuacct"] != "/y" || own[""] != "/init.scope" {
		t.Errorf("Paths = %v", own)
	}
}

func TestControllerDir(t *testing.T) {
	unified := `25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw`
	nested := `34 30 0:31 /process_api /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory`
	for _, tc := range []struct {
		name, mountinfo, procCgroup, controllers string
		want                                     Dir
		wantErr                                  bool
	}{
		{"v1 memory on a hybrid host", hybrid, "4:memory:/a/b\n0::/\n", "", Dir{Path: "/sys/fs/cgroup/memory/a/b"}, false},
		{"v2", unified, "0::/sys.slice/x\n", "cpu memory pids", Dir{Path: "/sys/fs/cgroup/sys.slice/x", V2: true}, false},
		{"v2 without the controller", unified, "0::/x\n", "cpu pids", Dir{}, true},
		{"a mount rooted below the top", nested, "4:memory:/process_api/c\n", "", Dir{Path: "/sys/fs/cgroup/memory/c"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := controllerDir(Mounts(tc.mountinfo), Paths(tc.procCgroup), "memory", func(string) string { return tc.controllers })
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %+v, %v; want %+v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestOwn(t *testing.T) {
	v1 := "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	unified := "30 23 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
	nsRoot := "30 23 0:26 /outer /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
	for _, tc := range []struct {
		name, mountinfo, cgroup string
		want                    Dir
	}{
		{"v2", unified, "0::/user.slice/session-1.scope\n", Dir{Path: "/sys/fs/cgroup/unified/user.slice/session-1.scope", V2: true}},
		{"hybrid takes a v1 hierarchy", unified + v1, "1:cpu:/a\n0::/b\n", Dir{Path: "/sys/fs/cgroup/cpu/a"}},
		{"v1 takes the first mounted", v1, "9:name=systemd:/s\n1:cpu:/c\n0::/\n", Dir{Path: "/sys/fs/cgroup/cpu/c"}},
		{"v1 by name", "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n", "9:name=systemd:/s\n", Dir{Path: "/sys/fs/cgroup/systemd/s"}},
		{"a cgroup namespace's mount", nsRoot, "0::/outer/inner\n", Dir{Path: "/sys/fs/cgroup/inner", V2: true}},
		{"listed in none mounted", v1, "0::/x\n", Dir{}},
		{"nothing mounted", "", "0::/x\n", Dir{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := own(Mounts(tc.mountinfo), Paths(tc.cgroup))
			if got != tc.want || ok != (tc.want.Path != "") {
				t.Errorf("own = %+v, %v; want %+v", got, ok, tc.want)
			}
		})
	}
}
