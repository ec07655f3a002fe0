package selftest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// The helper process of TestLeftoversOfAKilledSelftest: it plants a
// canary set, says where, and waits to be killed.
const plantHelperEnv = "TRIAGE_SELFTEST_PLANT_HELPER"

func TestMain(m *testing.M) {
	if base := os.Getenv(plantHelperEnv); base != "" {
		c, err := Plant(base, os.Getenv(plantHelperEnv+"_SELF"))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(c.Dir, c.SentinelPID())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A selftest killed with SIGKILL leaves its canary directory and its host
// sentinel; the next Plant under the same base removes both, and leaves a
// live owner's canaries and a directory it cannot attribute alone.
func TestLeftoversOfAKilledSelftest(t *testing.T) {
	if _, ok := processStart(os.Getpid()); !ok {
		t.Skip("no /proc: there is no sweep")
	}
	self := testenv.Binary(t)
	// Short: the deep canary sockets must fit a unix socket's path.
	base, err := os.MkdirTemp("", "ts-sweep-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), plantHelperEnv+"="+base, plantHelperEnv+"_SELF="+self)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	var sentinel int
	line, _ := bufio.NewReader(out).ReadString('\n')
	if _, err := fmt.Sscan(line, &dir, &sentinel); err != nil {
		_ = helper.Process.Kill()
		t.Fatalf("the helper did not plant: %q", line)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	t.Cleanup(func() { _ = syscall.Kill(sentinel, syscall.SIGKILL) })

	// A live owner's canaries (this process's) and a directory without an
	// owner file are not the sweep's.
	live, err := Plant(base, self)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	stranger := filepath.Join(base, canaryPrefix+"stranger")
	if err := os.Mkdir(stranger, 0o755); err != nil {
		t.Fatal(err)
	}
	// A forged owner: a dead pid, and a "token" that would match every
	// process: nothing is killed or removed for it.
	forged := filepath.Join(base, canaryPrefix+"forged")
	if err := os.Mkdir(forged, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(forged, ownerFile), []byte("999999999 1 canary- x\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Plant swept the killed helper's leftovers when it planted live.
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the killed selftest's canary directory %s is still there (%v)", dir, err)
	}
	if alive(sentinel) {
		t.Errorf("the killed selftest's sentinel (pid %d) still runs", sentinel)
	}
	// Recorded, never run: a forged token must not reach a real kill, not
	// even in a test whose validation was removed to see it fail.
	var killed []string
	sweepLeftovers(base, func(token string) { killed = append(killed, token) })
	if len(killed) > 0 {
		t.Errorf("the sweep would kill by %q: none of the directories left is a dead selftest's", killed)
	}
	for _, d := range []string{live.Dir, stranger, forged} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was swept: %v", d, err)
		}
	}
	if !alive(live.SentinelPID()) {
		t.Error("a live selftest's sentinel was killed")
	}
}

// alive: pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] != 'Z'
		}
	}
	return false
}

// KillByToken kills nothing for a token shorter than a canary's: one
// read back from a file, or a bug, must not end unrelated processes. The
// child's token is unique, so even without the guard this test ends only
// its own child.
func TestKillByTokenRefusesShortTokens(t *testing.T) {
	short := "short-" + strconv.FormatInt(time.Now().UnixNano(), 16)
	child := exec.Command(testenv.Binary(t), probe.ChildSubcommand, "sleep", short, "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); len(Survivors(short)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child never showed its token")
		}
	}
	KillByToken(short)
	if !alive(child.Process.Pid) {
		t.Fatalf("KillByToken(%q) killed a process", short)
	}
}
