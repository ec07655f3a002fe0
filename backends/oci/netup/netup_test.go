//go:build linux

package netup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// The test binary re-executed with NETUP_HELPER=hold is a process alone in
// a new network namespace: it answers "probe" and "flags" on stdin, one
// line each, and exits at EOF.
func TestMain(m *testing.M) {
	if os.Getenv("NETUP_HELPER") == "hold" {
		hold()
		return
	}
	os.Exit(m.Run())
}

func hold() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "probe":
			fmt.Println(probe())
		case "flags":
			lo, err := net.InterfaceByName("lo")
			if err != nil {
				fmt.Println("error", err)
			} else if lo.Flags&net.FlagUp != 0 {
				fmt.Println("up")
			} else {
				fmt.Println("down")
			}
		default:
			fmt.Println("unknown command")
		}
	}
}

// probe listens on 127.0.0.1 and connects to itself; it never dials
// anything but loopback.
func probe() string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "fail listen: " + err.Error()
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp4", ln.Addr().String(), 2*time.Second)
	if err != nil {
		return "fail dial: " + err.Error()
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "hi" {
		return fmt.Sprintf("fail read: %q %v", b, err)
	}
	return "ok"
}

// netns is a helper process in a fresh network namespace.
type netns struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "creating a network namespace and joining another need CAP_SYS_ADMIN")
}

func startNetns(t *testing.T) *netns {
	t.Helper()
	requireRoot(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NETUP_HELPER=hold")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a process in a new network namespace: %v", err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return &netns{cmd: cmd, in: in, out: bufio.NewScanner(out)}
}

func (n *netns) ask(t *testing.T, q string) string {
	t.Helper()
	if _, err := fmt.Fprintln(n.in, q); err != nil {
		t.Fatal(err)
	}
	if !n.out.Scan() {
		t.Fatalf("helper gave no answer to %q: %v", q, n.out.Err())
	}
	return n.out.Text()
}

// threadNamespaces lists the network namespace of every thread of this process.
func threadNamespaces(t *testing.T) map[string]int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, p := range tasks {
		if ns, err := os.Readlink(p); err == nil { // a thread may exit meanwhile
			seen[ns]++
		}
	}
	return seen
}

// interfaces describes this process's own interfaces: Up must not change them.
func interfaces(t *testing.T) []string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range ifs {
		out = append(out, fmt.Sprintf("%s %v", i.Name, i.Flags))
	}
	slices.Sort(out)
	return out
}

func TestUpMakesLoopbackWork(t *testing.T) {
	ns := startNetns(t)
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", ns.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if own == theirs {
		t.Fatal("the helper did not get its own network namespace")
	}
	ifsBefore := interfaces(t)

	if got := ns.ask(t, "flags"); got != "down" {
		t.Fatalf("lo in a new namespace is %q, want down", got)
	}
	before := ns.ask(t, "probe")
	if !strings.HasPrefix(before, "fail") {
		t.Fatalf("127.0.0.1 worked before Up: %s", before)
	}
	t.Logf("before Up: %s", before)

	if err := Up(ns.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if got := ns.ask(t, "flags"); got != "up" {
		t.Errorf("lo after Up is %q", got)
	}
	if got := ns.ask(t, "probe"); got != "ok" {
		t.Errorf("127.0.0.1 after Up: %s", got)
	}

	// Again, and concurrently: lo is already up, nothing changes, and no
	// thread of ours is left in the helper's namespace.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() { errs <- Up(ns.cmd.Process.Pid) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// The threads that joined are ended when their goroutines exit; give
	// the runtime a moment to reap them.
	if !testenv.Eventually(5*time.Second, func() bool {
		seen := threadNamespaces(t)
		return len(seen) == 1 && seen[own] > 0
	}) {
		t.Errorf("threads of the test process by network namespace: %v (own %s, helper %s)", threadNamespaces(t), own, theirs)
	}
	if now, _ := os.Readlink("/proc/self/ns/net"); now != own {
		t.Errorf("the test process moved to %s", now)
	}
	if after := interfaces(t); !slices.Equal(after, ifsBefore) {
		t.Errorf("own interfaces changed:\n%v\n%v", ifsBefore, after)
	}
	// Our own loopback still works, and goroutines on new threads still
	// see our namespace.
	for range 8 {
		if got := probe(); got != "ok" {
			t.Errorf("own 127.0.0.1: %s", got)
		}
	}
}

func TestThrowawayThreadIsNeverMain(t *testing.T) {
	for range 200 {
		err := onThrowawayThread(func() error {
			if unix.Gettid() == unix.Getpid() {
				return errors.New("ran on the main thread")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCreateAndRemove(t *testing.T) {
	testenv.RequireRoot(t, "creating a network namespace needs CAP_SYS_ADMIN")
	path := filepath.Join(t.TempDir(), "netns")
	if err := Create(path); err != nil {
		t.Fatal(err)
	}
	ns, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	same, err := sameNamespace(ns)
	if err != nil || same {
		t.Fatalf("the namespace at %s is this process's own (same=%v, err=%v)", path, same, err)
	}
	// Inside it: lo is up, 127.0.0.1 serves, and lo is the only interface.
	var flags uint16
	var ifaces []net.Interface
	var served string
	err = onThrowawayThread(func() error {
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if flags, err = ifFlags(fd); err != nil {
			return err
		}
		ifaces, err = net.Interfaces()
		served = probe()
		return err
	})
	ns.Close()
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.IFF_UP == 0 {
		t.Errorf("lo is down in the created namespace")
	}
	if len(ifaces) != 1 || ifaces[0].Name != "lo" {
		t.Errorf("interfaces in the created namespace: %v, want only lo", ifaces)
	}
	if served != "ok" {
		t.Errorf("loopback in the created namespace: %s", served)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still exists after Remove: %v", path, err)
	}
	if err := Remove(path); err != nil {
		t.Fatalf("a second Remove: %v", err)
	}
}
