package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/selftest"
)

// containersOf lists containers (running or not) whose parent-pid label is pid.
func containersOf(t *testing.T, cli *client.Client, pid int) []string {
	t.Helper()
	res, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", profiles.LabelParentPID+"="+strconv.Itoa(pid)),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// processesWith lists host pids (but except) whose argv holds token; the
// host sees the container's processes too.
func processesWith(token string, except int) []int {
	var out []int
	for _, pid := range selftest.Survivors(token) {
		if pid != except {
			out = append(out, pid)
		}
	}
	return out
}

// TestInterruptAndKillLeaveNothing: Ctrl-C and kill -9 of triage-sandbox
// mid-run both leave no container and no process behind.
func TestInterruptAndKillLeaveNothing(t *testing.T) {
	testenv.RequireDocker(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	root := workspace(t, "")
	// Ctrl-C once, kill -9 ten times: each must leave nothing.
	sigs := []syscall.Signal{syscall.SIGINT}
	for i := 0; i < 10; i++ {
		sigs = append(sigs, syscall.SIGKILL)
	}
	var worst time.Duration
	defer func() {
		if t.Failed() {
			return
		}
		t.Logf("%d interrupted/killed runs: 0 containers and 0 processes left; slowest cleanup %v", len(sigs), worst)
	}()
	for i, sig := range sigs {
		t.Run(fmt.Sprintf("%v-%d", sig, i), func(t *testing.T) {
			token := "lifecycle-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			cmd := exec.Command(testenv.Binary(t), "run", "--", "sh", "-c",
				"sleep 300 & setsid sleep 301 & sleep 302; : "+token)
			cmd.Dir = root
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			if !testenv.Eventually(20*time.Second, func() bool { return len(processesWith(token, pid)) > 0 }) {
				_ = cmd.Process.Kill()
				t.Fatal("the command never started")
			}
			if len(containersOf(t, cli, pid)) != 1 {
				t.Fatalf("want one labelled container, got %v", containersOf(t, cli, pid))
			}
			_ = cmd.Process.Signal(sig)
			err := cmd.Wait()
			if sig == syscall.SIGINT {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
					t.Errorf("exit after Ctrl-C = %v, want 130", err)
				}
			}
			start := time.Now()
			if !testenv.Eventually(10*time.Second, func() bool {
				return len(containersOf(t, cli, pid)) == 0 && len(processesWith(token, pid)) == 0
			}) {
				t.Fatalf("left behind after %v: containers %v, processes %v", sig, containersOf(t, cli, pid), processesWith(token, pid))
			}
			worst = max(worst, time.Since(start).Round(time.Millisecond))
		})
	}
}
