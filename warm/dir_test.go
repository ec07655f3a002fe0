//go:build unix

package warm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// A keeper directory another user made (issue 22, finding 3): with its
// predictable log and lock names planted as symlinks to the caller's own
// files, a session run must refuse the directory, not write through them.
func TestStartRefusesAnotherUsersKeeperDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting a directory of another user needs root")
	}
	home := t.TempDir()
	bashrc := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(bashrc, []byte("the victim's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	anything := filepath.Join(home, "anything")

	parent := t.TempDir()
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "warm")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Role: "agent", WorkspaceRoot: "/w", Backend: "local", Warm: policy.Warm{Session: "s1"}}
	pp := paths{dir, key(p)}
	for link, target := range map[string]string{pp.log(): bashrc, pp.lock(): anything} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(link, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}

	b := &Backend{SelfExe: "/bin/true", Dir: dir}
	_, err := b.Start(context.Background(), p, backends.StartOptions{})
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("a keeper directory of uid 65534 was used: %v", err)
	}
	if got, _ := os.ReadFile(bashrc); string(got) != "the victim's own\n" {
		t.Fatalf(".bashrc was written through the planted log: %q", got)
	}
	if _, err := os.Lstat(anything); !os.IsNotExist(err) {
		t.Fatalf("the planted lock's target was created: %v", err)
	}
}

// The happy path: a directory that is missing is made the caller's own,
// mode 0700.
func TestStartMakesItsOwnKeeperDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "warm")
	p := &policy.Policy{Role: "agent", WorkspaceRoot: "/w", Backend: "local", Warm: policy.Warm{Session: "s1"}}
	b := &Backend{SelfExe: "/bin/true", Dir: dir}
	_, err := b.Start(context.Background(), p, backends.StartOptions{})
	if err == nil || !strings.Contains(err.Error(), "keeper") {
		t.Fatalf("/bin/true as a keeper: %v", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the keeper directory: %v %v", fi, err)
	}
}
