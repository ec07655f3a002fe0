package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// TestConcurrentRuns: 32 CLI runs at once, mixed roles, exit codes and
// timeouts, each with its own token; every result must be its own, and
// nothing may be left behind. It logs throughput and p50/p95 latency.
func TestConcurrentRuns(t *testing.T) {
	testenv.RequireDocker(t)
	if testing.Short() {
		t.Skip("load test")
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	root := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	const n = 32
	type outcome struct {
		pid      int
		code     int
		latency  time.Duration
		stdout   string
		timedOut bool
		err      error
	}
	results := make([]outcome, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			role := []string{"agent", "reproducer"}[i%2]
			token := fmt.Sprintf("tok-%02d-%d", i, time.Now().UnixNano())
			args := []string{"run", "--json", "--role", role}
			script := fmt.Sprintf("echo %s; echo %s > repros/%s; exit %d", token, token, token, i%5)
			if i%8 == 7 {
				args = append(args, "--timeout", "1s")
				script = "echo " + token + "; sleep 30"
			}
			args = append(args, "--", "sh", "-c", script)
			cmd := exec.Command(testenv.Binary(t), args...)
			cmd.Dir = root
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				results[i].err = err
				return
			}
			results[i].pid = cmd.Process.Pid
			_ = cmd.Wait()
			results[i].latency = time.Since(t0)
			var js struct {
				ExitCode int    `json:"exit_code"`
				TimedOut bool   `json:"timed_out"`
				Stdout   string `json:"stdout"`
				Error    string `json:"error"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &js); err != nil {
				results[i].err = fmt.Errorf("bad JSON %q: %v", stdout.String(), err)
				return
			}
			if js.Error != "" {
				results[i].err = fmt.Errorf("refused: %s", js.Error)
			}
			results[i].code, results[i].stdout, results[i].timedOut = js.ExitCode, js.Stdout, js.TimedOut
			results[i].stdout = strings.TrimSpace(js.Stdout)
			if !strings.HasPrefix(results[i].stdout, token) {
				results[i].err = fmt.Errorf("stdout %q is not this run's (%s)", js.Stdout, token)
			}
			if i%8 != 7 {
				b, err := os.ReadFile(filepath.Join(root, "repros", token))
				if err != nil || strings.TrimSpace(string(b)) != token {
					results[i].err = fmt.Errorf("repros/%s: %q %v", token, b, err)
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	var lat []time.Duration
	var timeoutOverrun []time.Duration
	for i, r := range results {
		want := i % 5
		if i%8 == 7 {
			want = 124
			timeoutOverrun = append(timeoutOverrun, r.latency)
		}
		if r.err != nil {
			t.Errorf("run %d: %v", i, r.err)
			continue
		}
		if r.code != want || r.timedOut != (want == 124) {
			t.Errorf("run %d: exit %d timed out %v, want %d", i, r.code, r.timedOut, want)
		}
		lat = append(lat, r.latency)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		t.Logf("32 concurrent runs: wall %v, throughput %.1f runs/s, p50 %v, p95 %v, max %v; timed-out runs (1 s timeout) returned after %v",
			wall.Round(time.Millisecond), float64(n)/wall.Seconds(), lat[len(lat)/2].Round(time.Millisecond),
			lat[len(lat)*95/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), timeoutOverrun)
	}
	for _, r := range results {
		if r.pid == 0 {
			continue
		}
		if ids := containersOf(t, cli, r.pid); len(ids) > 0 {
			t.Errorf("run pid %d left containers %v", r.pid, ids)
		}
	}
}
