package docker

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
)

func TestEngineOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    Engine
	}{
		{"docker", map[string]string{"Server": "Docker/20.10.24+dfsg1 (linux)", "Api-Version": "1.41"},
			Engine{Name: EngineDocker, Version: "20.10.24+dfsg1", API: "1.41"}},
		{"podman", map[string]string{"Server": "Libpod/4.3.1 (linux)", "Api-Version": "1.41", "Libpod-Api-Version": "4.3.1"},
			Engine{Name: EnginePodman, Version: "4.3.1", API: "1.41"}},
		{"podman behind a proxy", map[string]string{"Server": "nginx", "Api-Version": "1.41", "Libpod-Api-Version": "5.0.0"},
			Engine{Name: EnginePodman, Version: "(version not said)", API: "1.41"}},
		{"nothing said", map[string]string{},
			Engine{Name: EngineDocker, Version: "(version not said)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			if got := engineOf(h); got != tc.want {
				t.Errorf("engineOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPodmanTmpfs(t *testing.T) {
	for _, tc := range []struct {
		name, opts, want, err string
	}{
		{"scratch home", "rw,size=1024,nosuid,nodev,noexec,mode=700,uid=65534,gid=65534",
			"rw,size=1024,nosuid,nodev,noexec,mode=700,U,notmpcopyup", ""},
		{"scratch tmp", "rw,size=1024,nosuid,nodev,exec,mode=1777", "rw,size=1024,nosuid,nodev,exec,mode=1777,notmpcopyup", ""},
		{"another owner", "rw,mode=700,uid=0,gid=0", "", "container's own user"},
		{"uid alone", "rw,uid=65534", "", "container's own user"},
		{"inode bound", "rw,size=1024,nr_inodes=10", "", "cannot bound its inodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podmanTmpfs(tc.opts, "65534:65534")
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("podmanTmpfs(%q) = %q, %v; want an error with %q", tc.opts, got, err, tc.err)
			case tc.err == "" && (err != nil || got != tc.want):
				t.Fatalf("podmanTmpfs(%q) = %q, %v; want %q", tc.opts, got, err, tc.want)
			}
		})
	}
}

// TestForPodman: the seccomp profile goes by path (the same bytes, written
// once), /run and /var/tmp are closed, nproc is the service's, and a
// policy's own nproc (gVisor) stays.
func TestForPodman(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "seccomp")
	profile := `{"defaultAction":"SCMP_ACT_ERRNO"}`
	req := func(ulimits ...*container.Ulimit) *CreateRequest {
		return &CreateRequest{
			Config: &container.Config{User: "65534:65534"},
			HostConfig: &container.HostConfig{
				ReadonlyRootfs: true,
				SecurityOpt:    []string{"no-new-privileges:true", "seccomp=" + profile},
				Tmpfs:          map[string]string{"/tmp": "rw,size=1024,mode=1777"},
				Resources:      container.Resources{Ulimits: ulimits},
			},
		}
	}
	r := req()
	if err := forPodman(r, dir, 4096); err != nil {
		t.Fatal(err)
	}
	path, ok := strings.CutPrefix(r.HostConfig.SecurityOpt[1], "seccomp=")
	if !ok || !filepath.IsAbs(path) {
		t.Fatalf("seccomp option %q is not a path", r.HostConfig.SecurityOpt[1])
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != profile {
		t.Fatalf("profile file holds %q, %v", b, err)
	}
	masked := req()
	masked.HostConfig.MaskedPaths = []string{"/a/.git/fsmonitor--daemon.ipc", "/b/daemon.sock"}
	if err := forPodman(masked, dir, 4096); err != nil || !slices.Contains(masked.HostConfig.SecurityOpt, "mask=/a/.git/fsmonitor--daemon.ipc:/b/daemon.sock") {
		t.Errorf("masked paths must reach Podman as its mask option: %v %v", masked.HostConfig.SecurityOpt, err)
	}
	masked = req()
	masked.HostConfig.MaskedPaths = []string{"/a:b"}
	if err := forPodman(masked, dir, 4096); err == nil {
		t.Error("a masked path with ':' was accepted")
	}
	if r.HostConfig.SecurityOpt[0] != "no-new-privileges:true" {
		t.Errorf("other security options changed: %v", r.HostConfig.SecurityOpt)
	}
	for _, d := range []string{"/run", "/var/tmp"} {
		if r.HostConfig.Tmpfs[d] != closedTmpfs+",notmpcopyup" {
			t.Errorf("%s = %q, want the closed tmpfs", d, r.HostConfig.Tmpfs[d])
		}
	}
	if r.HostConfig.Tmpfs["/tmp"] != "rw,size=1024,mode=1777,notmpcopyup" {
		t.Errorf("/tmp = %q", r.HostConfig.Tmpfs["/tmp"])
	}
	if u := r.HostConfig.Ulimits; len(u) != 1 || u[0].Name != "nproc" || u[0].Hard != 4096 {
		t.Errorf("ulimits = %+v, want nproc 4096", u)
	}
	r2 := req()
	if err := forPodman(r2, dir, 4096); err != nil || r2.HostConfig.SecurityOpt[1] != r.HostConfig.SecurityOpt[1] {
		t.Errorf("the same profile went to %q (%v), not %q", r2.HostConfig.SecurityOpt[1], err, r.HostConfig.SecurityOpt[1])
	}
	r3 := req(&container.Ulimit{Name: "nproc", Soft: 300, Hard: 300})
	if err := forPodman(r3, dir, 4096); err != nil || len(r3.HostConfig.Ulimits) != 1 || r3.HostConfig.Ulimits[0].Hard != 300 {
		t.Errorf("a policy's own nproc was replaced: %+v, %v", r3.HostConfig.Ulimits, err)
	}
}

func TestDropOption(t *testing.T) {
	if got := dropOption("rw,nr_inodes=5,size=1,nr_inodesx=2", "nr_inodes"); got != "rw,size=1,nr_inodesx=2" {
		t.Errorf("dropOption = %q", got)
	}
}
