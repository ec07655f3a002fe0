// Package testenv gives integration tests what they share: a static
// triage-sandbox binary built once per test process, and the rules of the
// two test tiers.
//
// The quick tier, `go test -short ./...`, needs no Docker daemon, no root
// and no runc: every test that needs one of them (or builds the binary,
// or takes long) skips under -short, through RequireDocker, RequireRoot or
// SkipShort, saying why. The full tier, scripts/test.sh, runs everything;
// there a missing Docker daemon is a failure (CI or
// TRIAGE_SANDBOX_REQUIRE_DOCKER set) rather than a skip (a laptop).
package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// builtOnce is a binary built once per test process.
type builtOnce struct {
	once sync.Once
	path string
	out  []byte
	err  error
}

// get builds with build on its first call and returns the path, failing t
// when the build failed.
func (b *builtOnce) get(t testing.TB, name string, build func() (string, []byte, error)) string {
	t.Helper()
	b.once.Do(func() { b.path, b.out, b.err = build() })
	if b.err != nil {
		t.Fatalf("building %s: %v\n%s", name, b.err, b.out)
	}
	return b.path
}

var cli, kube, inside, front builtOnce

// Binary builds ./cmd/triage-sandbox with CGO_ENABLED=0 (once per test
// process) and returns its path. Every test process links it afresh (go
// build's cache keeps that short) and renames it into BinaryCache, so one
// copy stays between runs, not one per test process.
func Binary(t testing.TB) string {
	t.Helper()
	return cli.get(t, "triage-sandbox", func() (string, []byte, error) { return build(BinaryCache()) })
}

// KubeBinary builds the second binary, triage-sandbox-kube (build tag
// kubernetes: the kubernetes backend linked in), once per test process,
// beside Binary's, and returns its path.
func KubeBinary(t testing.TB) string {
	t.Helper()
	return kube.get(t, "triage-sandbox-kube", func() (string, []byte, error) {
		return buildNamed(BinaryCache(), "triage-sandbox-kube", "kubernetes")
	})
}

// InsideBinary builds the small in-sandbox binary, triage-sandbox-inside,
// once per test process, beside Binary's, and returns its path: tests that
// run sandboxes pass it as backends.Env.InsideExe, so the holder and the
// local helper are the binary a release runs inside.
func InsideBinary(t testing.TB) string {
	t.Helper()
	return inside.get(t, "triage-sandbox-inside", func() (string, []byte, error) {
		return buildPackage(BinaryCache(), "triage-sandbox-inside", "", "./cmd/triage-sandbox-inside")
	})
}

// FrontBinary builds the small front binary (cmd/triage-sandbox-front,
// what users run as triage-sandbox) once per test process, beside
// Binary's, as triage-sandbox-front, and returns its path. It hands
// commands to a triage-sandbox-cli beside it: FrontPair puts the two
// together.
func FrontBinary(t testing.TB) string {
	t.Helper()
	return front.get(t, "triage-sandbox-front", func() (string, []byte, error) {
		return buildPackage(BinaryCache(), "triage-sandbox-front", "", "./cmd/triage-sandbox-front")
	})
}

// FrontPair lays out an install in a new test directory: the front as
// triage-sandbox and the CLI (Binary) as triage-sandbox-cli beside it,
// both hard links to the built binaries (copies when the directory is on
// another file system). It returns the front's path.
func FrontPair(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for src, name := range map[string]string{FrontBinary(t): "triage-sandbox", Binary(t): "triage-sandbox-cli"} {
		dst := filepath.Join(dir, name)
		if err := os.Link(src, dst); err != nil {
			b, err := os.ReadFile(src)
			if err == nil {
				err = os.WriteFile(dst, b, 0o755)
			}
			if err != nil {
				t.Fatalf("placing %s: %v", dst, err)
			}
		}
	}
	return filepath.Join(dir, "triage-sandbox")
}

// BinaryCache is the directory where Binary keeps the static binary: a
// cache the tests declare, the one file of theirs left in the temporary
// directory. Each checkout has its own (a directory named by a digest of
// its path): two checkouts tested at once must not replace each other's
// binary under a running test.
func BinaryCache() string {
	sum := sha256.Sum256([]byte(repoRoot()))
	return filepath.Join(os.TempDir(), fmt.Sprintf("triage-sandbox-test-bin-%d", os.Geteuid()), hex.EncodeToString(sum[:6]))
}

// build links the binary beside its final name and renames it there: a
// test process of another package may be running the one it replaces.
func build(dir string) (path string, out []byte, err error) {
	return buildNamed(dir, "triage-sandbox", "")
}

// buildNamed is build for a binary name and build tags.
func buildNamed(dir, name, tags string) (path string, out []byte, err error) {
	return buildPackage(dir, name, tags, "./cmd/triage-sandbox")
}

// buildPackage is buildNamed for a main package.
func buildPackage(dir, name, tags, pkg string) (path string, out []byte, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return "", nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	// Never stamped with a VCS revision, whatever GOFLAGS says: so the CLI
	// never proves the small binary its own source (package insidebin),
	// and a test that wants the small one inside names it in
	// backends.Env.InsideExe (InsideBinary).
	cmd := exec.Command("go", "build", "-buildvcs=false", "-tags", tags, "-o", tmp.Name(), pkg)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", out, err
	}
	path = filepath.Join(dir, name)
	return path, nil, os.Rename(tmp.Name(), path)
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SkipShort skips the test in the quick tier (-short), saying why it
// belongs to the full one.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("full tier only (-short): %s", why)
	}
}

// RequireRoot skips the test in the quick tier and when not run as root:
// the quick tier must pass the same for root and for anyone else.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	SkipShort(t, "needs root: "+why)
	if os.Geteuid() != 0 {
		t.Skipf("needs root: %s", why)
	}
}

// RequireDocker skips the test in the quick tier (-short) and when no
// daemon answers, unless CI or TRIAGE_SANDBOX_REQUIRE_DOCKER is set: there
// a missing daemon fails (but -short still skips: the quick tier never
// needs a daemon).
func RequireDocker(t testing.TB) {
	t.Helper()
	SkipShort(t, "needs a Docker daemon")
	cli, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cli.Close()
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" || os.Getenv("TRIAGE_SANDBOX_REQUIRE_DOCKER") != "" {
		t.Fatalf("docker daemon required but unreachable: %v", err)
	}
	t.Skipf("docker daemon unreachable (%v); set TRIAGE_SANDBOX_REQUIRE_DOCKER=1 to make this a failure", err)
}

// Eventually polls cond until it holds or d passes, and reports whether it held.
func Eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(25 * time.Millisecond)
	}
	return cond()
}
