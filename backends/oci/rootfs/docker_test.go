package rootfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// testImage imports a tiny root filesystem as an image under a unique tag
// (never the 1 GB default image) and removes it when the test ends.
func testImage(t *testing.T) (cli *client.Client, ref, id string) {
	t.Helper()
	testenv.RequireDocker(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	tool := file("usr/bin/tool", "#!/bin/sh\necho hi\n", 0o4755)
	tool.hdr.Uid, tool.hdr.Gid = 1000, 1000
	// Docker's import applies a hard link entry's attributes to the shared
	// inode, so they must be the file's, as real tar writers make them.
	link := hardlink("usr/bin/tool2", "usr/bin/tool")
	link.hdr.Mode, link.hdr.Uid, link.hdr.Gid, link.hdr.ModTime = tool.hdr.Mode, 1000, 1000, tool.hdr.ModTime
	data := mkTar(t,
		dir("etc/", 0o755), file("etc/os-release", "ID=rootfs-test\n", 0o644),
		dir("usr/", 0o755), dir("usr/bin/", 0o755), tool, link,
		symlink("bin", "usr/bin"), dir("home/", 0o755), dir("home/sandbox/", 0o750),
		// A marker unique to this test run, so two runs never share an image ID.
		file("etc/test-run", fmt.Sprintf("%s %d %d\n", t.Name(), os.Getpid(), time.Now().UnixNano()), 0o644),
	)
	ref = fmt.Sprintf("triage-sandbox-rootfs-test:%d-%d", os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(data), SourceName: "-"}, ref, client.ImageImportOptions{})
	if err != nil {
		t.Fatalf("importing the test image: %v", err)
	}
	body, _ := io.ReadAll(res)
	res.Close()
	if bytes.Contains(body, []byte(`"error"`)) {
		t.Fatalf("importing the test image: %s", body)
	}
	t.Cleanup(func() {
		_, _ = cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	img, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	return cli, ref, img.ID
}

// exportContainersLeft lists the export containers of image id still in the daemon.
func exportContainersLeft(t *testing.T, cli *client.Client, id string) int {
	t.Helper()
	h, _ := idHex(id)
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", profiles.LabelOwner+"="+OwnerValue, LabelImage+"="+h)})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func TestEnsureFromDaemon(t *testing.T) {
	cli, ref, id := testImage(t)
	c := &Cache{Dir: filepath.Join(t.TempDir(), "rootfs")}
	ctx := context.Background()

	start := time.Now()
	l, err := c.Acquire(ctx, cli, ref)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	if !l.Unpacked || l.ID != id {
		t.Errorf("lease %+v, want a fresh unpack of %s", l, id)
	}
	h, _ := idHex(id)
	if l.Root != filepath.Join(c.Dir, h, "rootfs") {
		t.Errorf("root at %s", l.Root)
	}
	if b, err := os.ReadFile(filepath.Join(l.Root, "etc/os-release")); err != nil || string(b) != "ID=rootfs-test\n" {
		t.Errorf("os-release: %q %v", b, err)
	}
	st, err := os.Lstat(filepath.Join(l.Root, "usr/bin/tool"))
	if err != nil || st.Mode() != os.ModeSetuid|0o755 || st.ModTime().Unix() != 1_600_000_000 {
		t.Errorf("tool: %v %v", st, err)
	} else if sys := st.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (sys.Uid != 1000 || sys.Gid != 1000) {
		t.Errorf("tool owned by %d:%d, want 1000:1000", sys.Uid, sys.Gid)
	}
	if target, _ := os.Readlink(filepath.Join(l.Root, "bin")); target != "usr/bin" {
		t.Errorf("bin -> %q", target)
	}
	var m Entry
	b, _ := os.ReadFile(filepath.Join(c.Dir, h, "complete"))
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("marker %s: %v", b, err)
	}
	if m.Image != ref || m.ID != id || !strings.HasPrefix(m.SHA256, "sha256:") || m.Bytes == 0 || m.Files < 4 || m.Source != "docker" || m.UnpackedAt.IsZero() {
		t.Errorf("marker %s", b)
	}
	if n := exportContainersLeft(t, cli, id); n != 0 {
		t.Errorf("%d export containers left behind", n)
	}
	l.Close()

	start = time.Now()
	root, err := c.Ensure(ctx, cli, ref)
	if err != nil || root != l.Root {
		t.Fatalf("second Ensure: %q %v", root, err)
	}
	t.Logf("first use %v, second %v", first, time.Since(start))
	b2, _ := os.ReadFile(filepath.Join(c.Dir, h, "complete"))
	if !bytes.Equal(b, b2) {
		t.Error("the second use rewrote the marker")
	}
	// Same image by its ID: the same entry.
	if root, err := c.Ensure(ctx, cli, id); err != nil || root != l.Root {
		t.Errorf("by ID: %q %v", root, err)
	}
}

func TestEnsureMissingImage(t *testing.T) {
	testenv.RequireDocker(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c := &Cache{Dir: t.TempDir()}
	_, err = c.Ensure(context.Background(), cli, "triage-sandbox-rootfs-test:does-not-exist")
	if err == nil || !strings.Contains(err.Error(), "triage-sandbox image build") {
		t.Fatalf("error %v", err)
	}
}

// holdExclusive takes the entry's lock so that the callers started next
// all queue on it, then lets them go at once: a real race for the unpack.
func holdExclusive(t *testing.T, dir, id string) (release func()) {
	t.Helper()
	h, _ := idHex(id)
	os.MkdirAll(dir, 0o700)
	f, err := lockFile(context.Background(), filepath.Join(dir, h+".lock"), unix.LOCK_EX, true)
	if err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

func TestEnsureConcurrentGoroutines(t *testing.T) {
	cli, ref, id := testImage(t)
	dir := filepath.Join(t.TempDir(), "rootfs")
	release := holdExclusive(t, dir, id)
	type result struct {
		l   *Lease
		err error
	}
	results := make(chan result, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			l, err := (&Cache{Dir: dir}).Acquire(context.Background(), cli, ref)
			results <- result{l, err}
		})
	}
	time.Sleep(300 * time.Millisecond)
	if len(results) != 0 {
		t.Fatal("Acquire did not wait for the lock")
	}
	release()
	wg.Wait()
	close(results)
	unpacked := 0
	var roots []string
	for r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.l.Unpacked {
			unpacked++
		}
		roots = append(roots, r.l.Root)
		r.l.Close()
	}
	if unpacked != 1 || roots[0] != roots[1] {
		t.Errorf("%d unpacks (want 1), roots %v", unpacked, roots)
	}
	if n := exportContainersLeft(t, cli, id); n != 0 {
		t.Errorf("%d export containers left behind", n)
	}
}

// TestEnsureConcurrentProcesses runs Ensure in two copies of the test
// binary at once (helperProcess below).
func TestEnsureConcurrentProcesses(t *testing.T) {
	_, ref, id := testImage(t)
	dir := filepath.Join(t.TempDir(), "rootfs")
	release := holdExclusive(t, dir, id)
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEnsureProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "ROOTFS_HELPER_DIR="+dir, "ROOTFS_HELPER_IMAGE="+ref)
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	time.Sleep(500 * time.Millisecond)
	release()
	unpacked := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
		sc := bufio.NewScanner(outs[i])
		found := false
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "RESULT unpacked="); ok {
				found = true
				if v == "true" {
					unpacked++
				}
			}
		}
		if !found {
			t.Fatalf("helper %d printed no result:\n%s", i, outs[i])
		}
	}
	if unpacked != 1 {
		t.Errorf("%d processes unpacked, want 1", unpacked)
	}
}

func TestHelperEnsureProcess(t *testing.T) {
	dir, ok := os.LookupEnv("ROOTFS_HELPER_DIR")
	if !ok {
		t.Skip("helper for TestEnsureConcurrentProcesses")
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := (&Cache{Dir: dir}).Acquire(ctx, cli, os.Getenv("ROOTFS_HELPER_IMAGE"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := os.Stat(filepath.Join(l.Root, "etc/os-release")); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("RESULT unpacked=%v\n", l.Unpacked)
}

// A `docker save` of the daemon's image unpacks without the daemon under
// the same ID.
func TestArchiveFromDockerSave(t *testing.T) {
	cli, ref, id := testImage(t)
	res, err := cli.ImageSave(context.Background(), []string{ref})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "image.tar")
	f, _ := os.Create(p)
	_, err = io.Copy(f, res)
	res.Close()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cache{Dir: t.TempDir()}
	l, err := c.AcquireArchive(context.Background(), p, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.ID != id {
		t.Errorf("archive ID %s, daemon ID %s", l.ID, id)
	}
	if b, err := os.ReadFile(filepath.Join(l.Root, "etc/os-release")); err != nil || string(b) != "ID=rootfs-test\n" {
		t.Errorf("os-release: %q %v", b, err)
	}
}

// An export container left by a crashed unpack (SIGKILL skips every defer)
// is removed by the next unpack of that image on this host.
func TestEnsureRemovesCrashedExport(t *testing.T) {
	cli, ref, id := testImage(t)
	h, _ := idHex(id)
	host, _ := os.Hostname()
	ctx := context.Background()
	_, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{
		Image: id, Entrypoint: []string{"/never"},
		Labels: map[string]string{profiles.LabelOwner: OwnerValue, LabelImage: h, profiles.LabelParentHost: host},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := exportContainersLeft(t, cli, id); n != 1 {
		t.Fatalf("%d leftovers staged", n)
	}
	if _, err := (&Cache{Dir: t.TempDir()}).Ensure(ctx, cli, ref); err != nil {
		t.Fatal(err)
	}
	if n := exportContainersLeft(t, cli, id); n != 0 {
		t.Errorf("%d export containers left behind", n)
	}
}
