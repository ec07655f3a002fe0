package docker_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// watchClient is a client of the test daemon.
func watchClient(t *testing.T) *client.Client {
	t.Helper()
	testenv.RequireDocker(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Ping(context.Background(), client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatal(err)
	}
	return cli
}

// sleeper starts a container running a plain sleep that no lifeline
// reaches; the test's cleanup removes it.
func sleeper(t *testing.T, cli *client.Client) string {
	t.Helper()
	ctx := context.Background()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: "triage-sandbox:latest", Cmd: []string{"sleep", "300"}, Entrypoint: []string{},
			Labels: map[string]string{profiles.LabelOwner: "triage-sandbox-test"}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := created.ID
	t.Cleanup(func() { _, _ = cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}) })
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	return id
}

func exists(cli *client.Client, id string) bool {
	_, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	return err == nil
}

func message(t *testing.T, op ownership.Op, id string) []byte {
	t.Helper()
	b, err := ownership.AppendMessage(nil, ownership.Message{Op: op, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWatcherRemovesTheContainersOfADeadOwner: one watcher carries many
// containers; it removes those still listed when its owner died, whatever
// runs inside (here a plain sleep that no lifeline reaches); with the owner
// alive it leaves them alone (the control: the owner removes its own), and
// it leaves alone one the owner said it removed (still there here, so a
// remove would show). A bad message ends its answers but not its watch.
// The watcher is the small inside binary (which waits, then starts the
// CLI's to remove) or, when that one cannot be used, the CLI's own.
func TestWatcherRemovesTheContainersOfADeadOwner(t *testing.T) {
	cli := watchClient(t)
	cliBin, insideBin := testenv.Binary(t), testenv.InsideBinary(t)
	for _, tc := range []struct {
		name                 string
		watcher              string
		ownerDies, badAtLast bool
	}{
		{name: "owner alive", watcher: insideBin},
		{name: "owner dies", watcher: insideBin, ownerDies: true},
		{name: "owner dies, the CLI's watcher", watcher: cliBin, ownerDies: true},
		{name: "owner dies after a bad message", watcher: insideBin, ownerDies: true, badAtLast: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listed := []string{sleeper(t, cli), sleeper(t, cli)}
			removed := sleeper(t, cli)
			owner, watcher, lifeline, answers := ownedWatcher(t, tc.watcher, cliBin)
			var line []byte
			for _, id := range append(listed, removed) {
				line = append(line, message(t, ownership.Listed, id)...)
			}
			line = append(line, message(t, ownership.Removed, removed)...)
			if _, err := lifeline.Write(line); err != nil {
				t.Fatal(err)
			}
			var got [4]byte
			if _, err := io.ReadFull(answers, got[:]); err != nil || string(got[:]) != "kkkk" {
				t.Fatalf("answers %q (%v), want four", got, err)
			}
			if tc.badAtLast {
				if _, err := lifeline.Write([]byte("W\x02?\x01a")); err != nil {
					t.Fatal(err)
				}
				if n, err := answers.Read(got[:]); err != io.EOF {
					t.Fatalf("after a bad message the watcher answered %q (%v), want the end of its answers", got[:n], err)
				}
			}
			if tc.ownerDies {
				_ = owner.Process.Kill()
				_ = owner.Wait()
			}
			_ = lifeline.Close()
			awaitWatcher(t, watcher)
			for _, id := range listed {
				if gone := !exists(cli, id); gone != tc.ownerDies {
					t.Errorf("listed container gone %v, want %v", gone, tc.ownerDies)
				}
			}
			if !exists(cli, removed) {
				t.Error("the watcher removed a container its owner said it removed")
			}
		})
	}
}

// TestWatcherOneProcessForMany: a Watcher lists many containers with one
// process, which ends once nothing is listed; the next List starts another.
func TestWatcherOneProcessForMany(t *testing.T) {
	testenv.SkipShort(t, "starts the watcher binary")
	w := docker.NewWatcher(backends.Env{SelfExe: testenv.Binary(t), InsideExe: testenv.InsideBinary(t)})
	ids := []string{"aa", "bb", "cc"}
	for _, id := range ids {
		if err := w.List(id); err != nil {
			t.Fatal(err)
		}
	}
	pid := w.Pid()
	if n := w.Processes(); n != 1 || pid == 0 {
		t.Fatalf("%d watcher processes for three containers (pid %d), want one", n, pid)
	}
	for _, id := range ids {
		if err := w.Removed(id); err != nil {
			t.Fatal(err)
		}
	}
	if w.Pid() != 0 {
		t.Error("a watcher still runs with nothing listed")
	}
	waitGone(t, pid)
	if err := w.List("dd"); err != nil {
		t.Fatal(err)
	}
	if n := w.Processes(); n != 2 || w.Pid() == 0 {
		t.Errorf("%d watcher processes after a List with none running, want 2", n)
	}
	if err := w.Removed("dd"); err != nil {
		t.Fatal(err)
	}
}

// TestWatcherWarm: a warmed watcher (started before anything is listed,
// as a start does beside its create) is the one the next List uses, and
// one whose start failed before any listing ends at Idle; Idle leaves a
// watcher with something listed alone.
func TestWatcherWarm(t *testing.T) {
	testenv.SkipShort(t, "starts the watcher binary")
	w := docker.NewWatcher(backends.Env{SelfExe: testenv.Binary(t), InsideExe: testenv.InsideBinary(t)})
	w.Warm()
	pid := w.Pid()
	if pid == 0 || w.Processes() != 1 {
		t.Fatalf("no watcher after Warm (pid %d, %d started)", pid, w.Processes())
	}
	w.Warm()
	if err := w.List("aa"); err != nil {
		t.Fatal(err)
	}
	if n := w.Processes(); n != 1 || w.Pid() != pid {
		t.Fatalf("%d watcher processes after Warm, Warm and List (pid %d, warmed %d), want the warmed one", n, w.Pid(), pid)
	}
	w.Idle()
	if w.Pid() != pid {
		t.Fatal("Idle ended a watcher with a container listed")
	}
	if err := w.Removed("aa"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	w.Warm()
	pid = w.Pid()
	if pid == 0 {
		t.Fatal("no watcher after the second Warm")
	}
	w.Idle()
	if w.Pid() != 0 {
		t.Fatal("a warmed watcher with nothing listed still runs after Idle")
	}
	waitGone(t, pid)
}

// waitGone waits for process pid (not our child) to end.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; syscall.Kill(pid, 0) == nil; i++ {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(b), ") Z ") {
			return
		}
		if i > 1000 {
			t.Fatalf("process %d did not end", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWatcherOfAKilledOwner: an owner process holding a Watcher (the
// test binary again, below) lists containers, its watcher is killed (kill
// -9) and the owner lists one more: the death is noticed and another
// watcher gets the whole list. Then the owner is killed with kill -9:
// every container it listed is removed, one it said it removed is not.
func TestWatcherOfAKilledOwner(t *testing.T) {
	cli := watchClient(t)
	cliBin, insideBin := testenv.Binary(t), testenv.InsideBinary(t)
	a, b, c, removed := sleeper(t, cli), sleeper(t, cli), sleeper(t, cli), sleeper(t, cli)
	owner := exec.Command(os.Args[0], "-test.run=^TestWatcherOwnerHelper$")
	owner.Env = append(os.Environ(), "WATCH_OWNER_HELPER=1", "WATCH_SELF="+cliBin, "WATCH_INSIDE="+insideBin,
		"WATCH_FIRST="+a+","+b+","+removed, "WATCH_REMOVED="+removed, "WATCH_THEN="+c)
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	owner.Stderr = os.Stderr
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _ = owner.Wait() }()
	lines := bufio.NewScanner(out)
	var said []string
	for lines.Scan() {
		said = append(said, lines.Text())
		if lines.Text() == "ready" {
			break
		}
	}
	if len(said) == 0 || said[len(said)-1] != "ready" {
		t.Fatalf("the owner said %q", said)
	}
	t.Logf("owner: %s", strings.Join(said, "; "))
	if !strings.Contains(strings.Join(said, ";"), "processes 2") {
		t.Fatalf("the owner did not start a second watcher after the first was killed: %q", said)
	}
	_ = owner.Process.Kill()
	_ = owner.Wait()
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range []string{a, b, c} {
		for exists(cli, id) {
			if time.Now().After(deadline) {
				t.Fatalf("container %.12s of the killed owner still there after 60 s", id)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !exists(cli, removed) {
		t.Error("the watcher removed a container its owner said it removed")
	}
}

// TestWatcherOwnerHelper is TestWatcherOfAKilledOwner's owner.
func TestWatcherOwnerHelper(t *testing.T) {
	if os.Getenv("WATCH_OWNER_HELPER") != "1" {
		t.Skip("the owner process of TestWatcherOfAKilledOwner")
	}
	w := docker.NewWatcher(backends.Env{SelfExe: os.Getenv("WATCH_SELF"), InsideExe: os.Getenv("WATCH_INSIDE")})
	for _, id := range strings.Split(os.Getenv("WATCH_FIRST"), ",") {
		if err := w.List(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Removed(os.Getenv("WATCH_REMOVED")); err != nil {
		t.Fatal(err)
	}
	first := w.Pid()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first)
	if err := w.List(os.Getenv("WATCH_THEN")); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("first watcher %d killed, now %d, processes %d\nready\n", first, w.Pid(), w.Processes())
	time.Sleep(time.Minute)
}

// TestWatcherRemovesAContainerListedByName: the owner lists a container's
// name before it asks for its create (create), so an owner killed between
// the create and its id's listing leaves nothing: the remover waits for a
// create still in flight (here it lands after the owner died) and removes
// it. The control: a container of the same kind whose name was not listed
// stays.
func TestWatcherRemovesAContainerListedByName(t *testing.T) {
	cli := watchClient(t)
	cliBin, insideBin := testenv.Binary(t), testenv.InsideBinary(t)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	listed, control := "triage-sandbox-test-listed-"+stamp, "triage-sandbox-test-unlisted-"+stamp
	owner, watcher, lifeline, answers := ownedWatcher(t, insideBin, cliBin)
	if _, err := lifeline.Write(message(t, ownership.Listed, listed)); err != nil {
		t.Fatal(err)
	}
	var got [1]byte
	if _, err := io.ReadFull(answers, got[:]); err != nil || got[0] != ownership.Ack {
		t.Fatalf("answer %q (%v), want one", got, err)
	}
	_ = owner.Process.Kill()
	_ = owner.Wait()
	_ = lifeline.Close()
	// The creates land after the owner's death.
	time.Sleep(300 * time.Millisecond)
	ctx := context.Background()
	for _, name := range []string{listed, control} {
		if _, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name,
			Config: &container.Config{Image: "triage-sandbox:latest", Cmd: []string{"true"}, Entrypoint: []string{},
				Labels: map[string]string{profiles.LabelOwner: "triage-sandbox-test"}},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true}) })
	}
	awaitWatcher(t, watcher)
	if !testenv.Eventually(10*time.Second, func() bool { return !exists(cli, listed) }) {
		t.Errorf("the container listed by name (%s), created after its owner died, was not removed", listed)
	}
	if !exists(cli, control) {
		t.Errorf("the container whose name was not listed (%s) was removed", control)
	}
}

// ownedWatcher starts a watcher (binary exe, remover cliBin) of an owner,
// a sleep the test kills to play the owner's death (the cleanup kills it
// too), with its lifeline and answers.
func ownedWatcher(t *testing.T, exe, cliBin string) (owner, watcher *exec.Cmd, lifeline io.WriteCloser, answers io.Reader) {
	t.Helper()
	owner = exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
	argv := protocol.MustArgv(exe, protocol.EntryWatch, protocol.Watch{
		Owner: owner.Process.Pid, OwnerStart: ownership.ProcessStart(owner.Process.Pid), Remover: cliBin})
	watcher = exec.Command(argv[0], argv[1:]...)
	lifeline, err := watcher.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	answers, err = watcher.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watcher.Start(); err != nil {
		t.Fatal(err)
	}
	return owner, watcher, lifeline, answers
}

// awaitWatcher waits (at most 60 s) for watcher to end, without error.
func awaitWatcher(t *testing.T, watcher *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- watcher.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the watcher: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = watcher.Process.Kill()
		t.Fatal("the watcher did not end")
	}
}
