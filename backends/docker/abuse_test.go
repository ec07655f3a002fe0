package docker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// runCaptured runs argv with bounded capture (as `run --json` does).
func runCaptured(t *testing.T, f fixture, role profiles.Role, timeout time.Duration, argv ...string) (backends.Result, *output.Capture, *output.Capture) {
	t.Helper()
	testenv.RequireDocker(t)
	b, err := docker.New(backends.Env{SelfExe: testenv.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	p := build(t, f, role, currentHost(t))
	stdout, stderr := output.NewCapture(0), output.NewCapture(0)
	res, err := sandbox.Run(context.Background(), b, sandbox.Request{
		Policy: p, Timeout: timeout, Command: backends.Command{Argv: argv},
		Streams: backends.Streams{Stdout: stdout, Stderr: stderr},
		// What the sandbox holds when a command gets past the gate.
		NoGate: true,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	assertGone(t, b.(*docker.Backend).Client(), res.Sandbox)
	return res.Result, stdout, stderr
}

// hostResponsive measures how long the host takes to fork and run `true`.
func hostResponsive(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	if err := exec.Command("true").Run(); err != nil {
		t.Fatalf("host cannot run a process: %v", err)
	}
	return time.Since(start)
}

func TestResourceAbuseStaysInside(t *testing.T) {
	f := newFixture(t)
	t.Run("fork bomb", func(t *testing.T) {
		done := make(chan struct{})
		var worst time.Duration
		go func() {
			defer close(done)
			for i := 0; i < 20; i++ {
				if d := hostResponsive(t); d > worst {
					worst = d
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		start := time.Now()
		// The bound is loose (a loaded machine starts and removes
		// containers slowly); what matters is that the timeout, not the
		// command's own end after the sleep, ended it.
		// The shell forks once, before the bomb exists, then becomes the
		// sleep: a fork of its own in the full process table would fail
		// (dash then exits 2 before the timeout).
		res, _, stderr := runCaptured(t, f, "agent", 4*time.Second, "sh", "-c", "b() { b | b & }; b & exec sleep 10")
		<-done
		if !res.TimedOut || time.Since(start) > 45*time.Second {
			t.Errorf("fork bomb: exit %d timed out %v after %v; want the timeout to end it; stderr: %.3000s", res.ExitCode, res.TimedOut, time.Since(start), stderr.String())
		}
		if worst > 2*time.Second {
			t.Errorf("host needed %v to run a process during the bomb", worst)
		}
		t.Logf("fork bomb: contained, host fork+exec worst %v", worst)
	})
	t.Run("memory bomb is told apart as OOM", func(t *testing.T) {
		res, _, stderr := runCaptured(t, f, "agent", time.Minute, "python3", "-c",
			"x = []\nwhile True: x.append(bytearray(64 << 20))")
		if res.ExitCode != 137 || !res.OOMKilled {
			t.Errorf("exit %d oom %v, want 137 and oom (%s)", res.ExitCode, res.OOMKilled, stderr.String())
		}
	})
	t.Run("a plain SIGKILL is not OOM", func(t *testing.T) {
		res, _, _ := runCaptured(t, f, "agent", time.Minute, "sh", "-c", "kill -KILL $$")
		if res.ExitCode != 137 || res.OOMKilled {
			t.Errorf("exit %d oom %v, want 137 without oom", res.ExitCode, res.OOMKilled)
		}
	})
	// The host disk's free space is the whole machine's: what other tests
	// write meanwhile moves it too (CI ran the kubernetes package beside
	// this one: 122 MiB once). A scratch on the host disk loses it every
	// time the same way, so only a loss in every one of three runs fails.
	t.Run("filling scratch", func(t *testing.T) {
		var drops []int64
		for range 3 {
			var before, after syscall.Statfs_t
			_ = syscall.Statfs(f.root, &before)
			res, stdout, _ := runCaptured(t, f, "agent", time.Minute, "sh", "-c",
				"dd if=/dev/zero of=$TMPDIR/fill bs=1M count=4096 2>&1; echo status $?")
			_ = syscall.Statfs(f.root, &after)
			if res.ExitCode != 0 || !strings.Contains(stdout.String(), "No space left on device") {
				t.Fatalf("scratch should fill up inside: exit %d, %q", res.ExitCode, stdout.String())
			}
			freeDrop := (int64(before.Bavail) - int64(after.Bavail)) * int64(before.Bsize)
			if freeDrop <= 64<<20 {
				return
			}
			drops = append(drops, freeDrop>>20)
		}
		t.Errorf("host disk lost %v MiB to the sandbox's scratch in each of three runs", drops)
	})
	t.Run("huge and sparse files in the outputs", func(t *testing.T) {
		f := newFixture(t)
		size := int64(32 << 20)
		f.cfg.Sandbox.FileSize = &size
		res, stdout, _ := runCaptured(t, f, "reproducer", time.Minute, "sh", "-c",
			"cd repros; head -c 100000000 /dev/zero > big; echo big=$?; truncate -s 1T sparse; echo sparse=$?; ls -l")
		out := stdout.String()
		if res.ExitCode != 0 || strings.Contains(out, "big=0") || strings.Contains(out, "sparse=0") {
			t.Fatalf("writes past the file size limit succeeded: exit %d %q", res.ExitCode, out)
		}
		for _, name := range []string{"big", "sparse"} {
			if fi, err := os.Stat(filepath.Join(f.root, "repros", name)); err == nil && fi.Size() > size {
				t.Errorf("%s is %d bytes on the host, limit %d", name, fi.Size(), size)
			}
		}
	})
	t.Run("flooding output", func(t *testing.T) {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heapBefore := ms.HeapInuse
		res, stdout, _ := runCaptured(t, f, "agent", time.Minute, "sh", "-c", "head -c 200000000 /dev/zero; echo; echo tail-marker")
		runtime.ReadMemStats(&ms)
		if res.ExitCode != 0 || stdout.Total() < 200000000 || !stdout.Truncated() {
			t.Fatalf("exit %d, %d bytes, truncated %v", res.ExitCode, stdout.Total(), stdout.Truncated())
		}
		if !strings.Contains(stdout.String(), "tail-marker") {
			t.Error("the tail of the output was lost")
		}
		if grew := int64(ms.HeapInuse) - int64(heapBefore); grew > 32<<20 {
			t.Errorf("heap grew %d MiB while capturing 200 MB", grew>>20)
		}
	})
}
