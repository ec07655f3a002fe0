package ownership

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOwnerGone: the watcher has work only when the lifeline ended without
// the owner's word and the owner is no longer alive (a dead process whose
// start time no longer matches, or a pid reused by another).
func TestOwnerGone(t *testing.T) {
	self := os.Getpid()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadStart := ProcessStart(self) + "0" // no process started then has this pid
	// A zombie: exited, not yet waited for (an owner killed with SIGKILL
	// whose parent has not read its status).
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zombie.Wait() })
	zpid := zombie.Process.Pid
	zstart := ""
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(zpid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if zstart == "" {
			zstart = StatStartTime(string(b))
		}
		if statState(string(b)) == "Z" {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if b, _ := os.ReadFile("/proc/" + strconv.Itoa(zpid) + "/stat"); statState(string(b)) != "Z" || zstart == "" {
		t.Fatalf("no zombie to test with: %q", b)
	}
	for _, tc := range []struct {
		name     string
		lifeline string
		owner    int
		start    string
		want     bool
	}{
		{"owner alive, no word", "", self, ProcessStart(self), false},
		{"owner alive, removed", "r", self, ProcessStart(self), false},
		{"owner dead, no word", "", dead.Process.Pid, deadStart, true},
		{"owner dead, removed", "r", dead.Process.Pid, deadStart, false},
		{"owner dead, another word", "x", dead.Process.Pid, deadStart, true},
		{"pid reused: start differs", "", self, deadStart, true},
		{"owner a zombie, no word", "", zpid, zstart, true},
		{"owner a zombie, removed", "r", zpid, zstart, false},
	} {
		if got := OwnerGone(strings.NewReader(tc.lifeline), tc.owner, tc.start); got != tc.want {
			t.Errorf("%s: OwnerGone = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOwnerGoneWaitsForADyingOwner: the lifeline can end a moment before
// its owner is seen gone (a killed process closes its descriptors before
// it becomes a zombie); the watcher must still remove what it owned.
func TestOwnerGoneWaitsForADyingOwner(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	owner := exec.Command("sh", "-c", "exec 3>&-; sleep 0.3")
	owner.ExtraFiles = []*os.File{w}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	start := ProcessStart(owner.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- owner.Wait() }()
	if !OwnerGone(r, owner.Process.Pid, start) {
		t.Error("OwnerGone = false for an owner that closed its lifeline and died 0.3 s later, want true")
	}
	<-done
}
