package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// commandGuard runs this test binary as the guard command in mode.
func commandGuard(t *testing.T, mode, answer string, timeout time.Duration) *Guard {
	t.Helper()
	t.Setenv(helperEnv, mode)
	t.Setenv("GUARD_TEST_ANSWER", answer)
	t.Setenv("GORACE", "atexit_sleep_ms=0") // a -race helper otherwise lingers 1s at exit
	cfg := DefaultConfig()
	cfg.Model = "cmd-model"
	cfg.Command = []string{os.Args[0], "-test.run=^$"}
	cfg.Timeout = timeout
	return mustNew(t, cfg)
}

func TestJudgeCommand(t *testing.T) {
	for _, tc := range []struct {
		name, mode, answer string
		allowed            bool
		reason             string
	}{
		{"allowed", "answer", allowAnswer, true, ""},
		{"allowed fenced", "answer", "```json\n" + allowAnswer + "\n```\n", true, ""},
		{"blocked by scores", "answer", blockAnswer, false, "blocked by the guard: safe 0.1 < min_safe 0.5"},
		{"bad output", "answer", "I think it is safe", false, "guard unavailable: answer is not a JSON object"},
		{"partial output", "answer", `{"safe":0.9`, false, "guard unavailable: "},
		{"empty output", "answer", "", false, "answer is empty"},
		{"non-zero exit", "fail", "", false, "exit status 3: model crashed second line"},
		{"huge output", "flood", "", false, "too large"},
		{"missing program", "", "", false, "guard unavailable: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := commandGuard(t, tc.mode, tc.answer, 10*time.Second)
			if tc.name == "missing program" {
				g.transport = &commandTransport{argv: []string{"/nonexistent/guard-model"}}
			}
			v := judge(t, g, sampleRequest())
			if v.Allowed != tc.allowed || !strings.Contains(v.Reason, tc.reason) {
				t.Fatalf("verdict %+v, want allowed=%v reason containing %q", v, tc.allowed, tc.reason)
			}
		})
	}
}

func TestJudgeCommandTimeout(t *testing.T) {
	g := commandGuard(t, "sleep", "", 300*time.Millisecond)
	start := time.Now()
	v := judge(t, g, sampleRequest())
	if v.Allowed || !strings.Contains(v.Reason, "timeout") {
		t.Fatalf("verdict %+v", v)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s", d)
	}
}

// The timeout kills the whole process group: a grandchild holding stdout
// does not keep Judge waiting, nor survive it.
func TestJudgeCommandTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("GUARD_TEST_PIDFILE", pidFile)
	g := commandGuard(t, "sleep-child", "", 300*time.Millisecond)
	start := time.Now()
	v := judge(t, g, sampleRequest())
	if v.Allowed || !strings.Contains(v.Reason, "timeout") {
		t.Fatalf("verdict %+v", v)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s: the grandchild kept stdout open", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("helper wrote no child pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d outlived the timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports a running process (a zombie awaiting its reaper is dead).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: trust kill(0)
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}
