package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/runreport"
)

// TestCheckoutWritesEveryOwner: a TypeScript package's build writes dist/
// (tsc, when the test machine has typescript cached, see
// typescriptModules) and its tests write coverage into the checkout, in the
// reproducer with the default config, on docker, oci and local:
//
//   - as root with a root-owned workspace and a checkout owned by uid 1000
//     (CI in a container): the sandbox runs as the checkout's owner;
//   - as root with the reverse, a workspace owned by uid 1000 and a
//     root-owned checkout: the sandbox runs as the workspace's owner, and
//     the overlay's lower layer is an id-mapped view in which root's files
//     are the sandbox's (made on the host, for local too: the helper's
//     user namespace could not);
//   - as root with everything root's (CI in a container): the sandbox runs
//     as nobody, root's files nobody's in the id-mapped view;
//   - as a normal user (uid 1000, in the docker socket's group for docker):
//     the overlay is the helper's own (local, in its user namespace) or the
//     daemon's (docker); oci refuses a normal user altogether.
//
// Every time the host's checkout is unchanged afterwards, byte for byte,
// owners and modes included.
func TestCheckoutWritesEveryOwner(t *testing.T) {
	testenv.RequireRoot(t, "gives the checkout to another uid and runs the CLI as a normal user")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("the host has no node: the default toolchain is the host's")
	}
	testenv.RequireDocker(t)
	ts := typescriptModules()
	if ts == "" {
		// The CI tier has scripts/test.sh install it (no test reaches the
		// network): there a missing tsc is a failure, never a weaker test.
		if os.Getenv("CI") != "" || os.Getenv("TRIAGE_SANDBOX_REQUIRE_DOCKER") != "" {
			t.Fatalf("no typescript cached in %s: scripts/test.sh installs it (npm install --prefix DIR typescript@5)", typescriptCache())
		}
		t.Logf("no typescript cached (%s): the build writes dist/ without tsc", typescriptCache())
	}
	for _, backend := range []string{"docker", "oci", "local"} {
		for _, who := range []string{"root", "user", "root-reverse", "root-all"} {
			t.Run(backend+"/"+who, func(t *testing.T) {
				if backend == "oci" {
					if _, err := exec.LookPath("runc"); err != nil {
						t.Skip("no runc")
					}
					if who == "user" {
						t.Skip("the oci backend refuses a normal user altogether (rootless runc is not set up)")
					}
				}
				config := "[project]\ncheckout = \"../widgets\"\n"
				if backend == "local" && who == "user" {
					// A normal user has no cgroup of its own here.
					config += "[sandbox]\naccept_weaker = [\"memory_limit\", \"pids_limit\", \"cpu_limit\"]\n"
				}
				root, checkout := ownedProject(t, "nodebuild", config, ts, who == "user" || who == "root-reverse")
				wantUID := "1000"
				if who == "root-all" {
					wantUID = "65534"
				}
				if who == "root-reverse" || who == "root-all" {
					// The reverse: a user's workspace, root's checkout. The
					// sandbox runs as the workspace's owner and sees root's
					// files as its own in an id-mapped lower layer.
					if out, err := exec.Command("chown", "-R", "0:0", checkout).CombinedOutput(); err != nil {
						t.Fatalf("chown: %v: %s", err, out)
					}
				}
				before := treeHash(t, checkout)
				args := []string{"run", "--json", "--role", "reproducer", "--backend", backend, "--workdir", checkout, "--",
					"sh", "-c", `npm run build && npm test && echo "written=$(ls dist coverage | wc -l) uid=$(id -u)" &&
echo "kib=$(df -k . | tail -1 | awk '{print $2}') opts=$(grep " $PWD " /proc/self/mountinfo | cut -d' ' -f6)"`}
				var r cliResult
				if who == "user" {
					r = runAsUser(t, root, args...)
				} else {
					r = runCLI(t, root, nil, args...)
				}
				var rep runreport.Report
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
					t.Fatalf("exit %d, --json: %v\nstdout %q\nstderr %s", r.code, err, r.stdout, r.stderr)
				}
				if rep.ExitCode != 0 {
					t.Fatalf("build and test: exit %d\nstdout %s\nstderr %s\nhints %q warnings %q", rep.ExitCode, rep.Stdout, rep.Stderr, rep.Hints, rep.Warnings)
				}
				for _, w := range rep.Warnings {
					if strings.Contains(w, "checkout is read-only") {
						t.Errorf("warning: %s", w)
					}
				}
				got := map[string]string{}
				for _, f := range strings.Fields(rep.Stdout) {
					if k, v, ok := strings.Cut(f, "="); ok {
						got[k] = v
					}
				}
				if got["uid"] != wantUID || got["written"] == "" || got["written"] == "0" {
					t.Errorf("want dist/ and coverage/ written as uid %s, got stdout %s", wantUID, rep.Stdout)
				}
				// Bounded like the staged writable paths (the reproducer's
				// writable_size), nosuid, nodev.
				if kib, err := strconv.Atoi(got["kib"]); err != nil || kib <= 0 || kib > 512*1024 {
					t.Errorf("the checkout's file system holds %q KiB, want at most the reproducer's writable_size (512 MiB)", got["kib"])
				}
				if opts := strings.Split(got["opts"], ","); !slices.Contains(opts, "nosuid") || !slices.Contains(opts, "nodev") {
					t.Errorf("the checkout's mount options %q lack nosuid or nodev", got["opts"])
				}
				if ts != "" && !strings.Contains(rep.Stdout, "built with tsc") {
					t.Errorf("tsc did not build: %s", rep.Stdout)
				}
				if after := treeHash(t, checkout); after != before {
					t.Errorf("the host checkout changed: %s before, %s after", before, after)
				}
				if _, err := os.Stat(filepath.Join(checkout, "dist")); err == nil {
					t.Error("dist/ reached the host checkout")
				}
			})
		}
	}
}

// projectUser is the normal user the tests run as and give checkouts to.
const projectUser = 1000

// ownedProject copies testdata/realprojects/NAME into a checkout beside a
// workspace with config: the checkout is projectUser's; the workspace is
// root's, or projectUser's too when userOwned. ts, when not "", is a
// node_modules with typescript, copied into the checkout.
func ownedProject(t *testing.T, name, config, ts string, userOwned bool) (root, checkout string) {
	t.Helper()
	root = workspace(t, config)
	checkout = filepath.Join(filepath.Dir(root), "widgets")
	if out, err := exec.Command("cp", "-a", filepath.Join("testdata", "realprojects", name)+"/.", checkout).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v: %s", name, err, out)
	}
	if ts != "" {
		if out, err := exec.Command("cp", "-a", ts, filepath.Join(checkout, "node_modules")).CombinedOutput(); err != nil {
			t.Fatalf("copying typescript: %v: %s", err, out)
		}
	}
	// The test's temporary directories are root's alone (0700): the
	// sandbox's user and a normal caller must reach the checkout.
	for d := filepath.Dir(root); d != filepath.Dir(d) && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	owned := []string{checkout}
	if userOwned {
		owned = append(owned, filepath.Dir(root))
	}
	for _, d := range owned {
		if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", projectUser, projectUser), d).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v: %s", err, out)
		}
	}
	return root, checkout
}

// runAsUser runs the CLI as projectUser, with the docker socket's group
// (a member of the docker group), a home and a state directory of its own,
// from copies of the binaries it can read.
func runAsUser(t *testing.T, dir string, args ...string) cliResult {
	t.Helper()
	return runAsUserWithHome(t, userHome(t), dir, args...)
}

// userHome is a home directory of projectUser's, for one or more runAsUser.
func userHome(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	home := filepath.Join(parent, "home")
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, projectUser, projectUser); err != nil {
		t.Fatal(err)
	}
	return home
}

// runAsUserWithHome is runAsUser with home (and the state directory in it)
// kept across runs: a prepare and the runs that read what it prepared.
func runAsUserWithHome(t *testing.T, home, dir string, args ...string) cliResult {
	t.Helper()
	bin := t.TempDir()
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(bin, "triage-sandbox")
	for src, dst := range map[string]string{testenv.Binary(t): self, testenv.InsideBinary(t): filepath.Join(bin, "triage-sandbox-inside")} {
		if out, err := exec.Command("cp", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("copying %s: %v: %s", src, err, out)
		}
	}
	groups := []uint32{projectUser}
	var st syscall.Stat_t
	if err := syscall.Stat("/var/run/docker.sock", &st); err != nil || st.Gid == 0 {
		t.Fatalf("the docker socket has no group a normal user could be in (gid %d, %v): give it one (a docker group)", st.Gid, err)
	}
	groups = append(groups, st.Gid)
	cmd := exec.Command(self, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: projectUser, Gid: projectUser, Groups: groups}}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, ".state")}
	return runCmd(t, cmd)
}

// treeHash digests every entry under dir: its path, type, mode, owner,
// size and contents (a symlink's target).
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "%s\x00%v\x00%d:%d\x00%d\x00", rel, fi.Mode(), st.Uid, st.Gid, fi.Size())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			io.WriteString(h, target)
		case fi.Mode().IsRegular():
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("hashing %s: %v", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// typescriptCache is where a test machine keeps typescript for the tests
// (tests never reach the network): `npm install --prefix DIR typescript@5`
// once. TRIAGE_SANDBOX_TEST_TYPESCRIPT names another.
func typescriptCache() string {
	if d := os.Getenv("TRIAGE_SANDBOX_TEST_TYPESCRIPT"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "triage-sandbox-test", "typescript")
}

// typescriptModules is the cached node_modules holding typescript, "" when
// there is none.
func typescriptModules() string {
	d := filepath.Join(typescriptCache(), "node_modules")
	if _, err := os.Stat(filepath.Join(d, "typescript", "bin", "tsc")); err != nil {
		return ""
	}
	return d
}
