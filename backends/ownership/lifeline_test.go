package ownership

import (
	"os"
	"os/exec"
	"strings"
	"testing"
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
	} {
		if got := OwnerGone(strings.NewReader(tc.lifeline), tc.owner, tc.start); got != tc.want {
			t.Errorf("%s: OwnerGone = %v, want %v", tc.name, got, tc.want)
		}
	}
}
