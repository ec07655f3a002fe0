package docker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/moby/api/types/container"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
)

// TestEnsureHosts: whatever lies at the hosts file's path, a start binds
// exactly launch.HostsContent, 0644, a regular file of this user's.
func TestEnsureHosts(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"missing", func(*testing.T, string) {}},
		{"intact", func(t *testing.T, path string) { write(t, path, launch.HostsContent, 0o644) }},
		{"other bytes", func(t *testing.T, path string) { write(t, path, "10.0.0.1\tlocalhost\n", 0o644) }},
		{"writable by others", func(t *testing.T, path string) { write(t, path, launch.HostsContent, 0o666) }},
		{"a symlink", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			write(t, target, launch.HostsContent, 0o644)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "docker")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "hosts")
			tt.plant(t, path)
			err := ensureHosts(path)
			if tt.name == "a directory" {
				if err == nil {
					t.Fatal("a directory at the hosts file's path was taken")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !hostsIntact(path) {
				fi, _ := os.Lstat(path)
				b, _ := os.ReadFile(path)
				t.Fatalf("after ensureHosts: %v %q", fi.Mode(), b)
			}
		})
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestOwnLoopbackOnlyForNone: only a sandbox on its own loopback, on
// Docker's engine, loses the daemon's network; the outbound one keeps its
// bridge, and Podman keeps "none".
func TestOwnLoopbackOnlyForNone(t *testing.T) {
	docker, podman := Engine{Name: EngineDocker}, Engine{Name: EnginePodman}
	tests := []struct {
		name string
		eng  Engine
		mode string
		want bool
	}{
		{"docker, none", docker, "none", true},
		{"docker, bridge", docker, "bridge", false},
		{"podman, none", podman, "none", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &CreateRequest{HostConfig: hostConfigWithNetwork(tt.mode)}
			if got := ownLoopback(tt.eng, req); got != tt.want {
				t.Fatalf("ownLoopback = %v, want %v", got, tt.want)
			}
		})
	}
}

func hostConfigWithNetwork(mode string) *container.HostConfig {
	return &container.HostConfig{NetworkMode: container.NetworkMode(mode)}
}
