package ownership

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOwnerDied: the watcher has work only when the owner is no longer
// alive (a dead process, a zombie, or a pid reused by another).
func TestOwnerDied(t *testing.T) {
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
		name  string
		owner int
		start string
		want  bool
	}{
		{"owner alive", self, ProcessStart(self), false},
		{"owner dead", dead.Process.Pid, deadStart, true},
		{"pid reused: start differs", self, deadStart, true},
		{"owner a zombie", zpid, zstart, true},
	} {
		if got := OwnerDied(tc.owner, tc.start); got != tc.want {
			t.Errorf("%s: OwnerDied = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOwnerDiedWaitsForADyingOwner: the lifeline can end a moment before
// its owner is seen gone (a killed process closes its descriptors before
// it becomes a zombie); the watcher must still remove what it owned.
func TestOwnerDiedWaitsForADyingOwner(t *testing.T) {
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
	_, _ = io.Copy(io.Discard, r)
	if !OwnerDied(owner.Process.Pid, start) {
		t.Error("OwnerDied = false for an owner that closed its lifeline and died 0.3 s later, want true")
	}
	<-done
}

// TestFollow: what a lifeline leaves listed, and each message answered.
func TestFollow(t *testing.T) {
	msg := func(op Op, id string) string {
		b, err := AppendMessage(nil, Message{Op: op, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name     string
		lifeline string
		want     []string
		acks     int
		wantErr  string
	}{
		{"nothing", "", nil, 0, ""},
		{"two listed", msg(Listed, "bb") + msg(Listed, "aa"), []string{"aa", "bb"}, 2, ""},
		{"one removed", msg(Listed, "aa") + msg(Listed, "bb") + msg(Removed, "aa"), []string{"bb"}, 3, ""},
		{"removed unknown", msg(Removed, "cc"), nil, 1, ""},
		{"listed twice", msg(Listed, "aa") + msg(Listed, "aa"), []string{"aa"}, 2, ""},
		{"cut short", msg(Listed, "aa") + msg(Listed, "bb")[:5], []string{"aa"}, 1, "cut short"},
		{"bad magic", msg(Listed, "aa") + "X" + msg(Listed, "bb")[1:], []string{"aa"}, 1, "where a message starts"},
		{"a name", msg(Listed, "triage-sandbox-agent-0a1b") + msg(Listed, "aa"), []string{"aa", "triage-sandbox-agent-0a1b"}, 2, ""},
		{"a name removed", msg(Listed, "triage-sandbox-agent-0a1b") + msg(Removed, "triage-sandbox-agent-0a1b"), nil, 2, ""},
		{"other version", "W\x01+\x02aa", nil, 0, "version 1"},
		{"bad op", "W\x02?\x02aa", nil, 0, "unknown op"},
		{"no id", "W\x02+\x00", nil, 0, "id of 0 bytes"},
		{"not a name", "W\x02+\x02a/", nil, 0, "lowercase hex"},
		{"upper case", "W\x02+\x02AA", nil, 0, "lowercase hex"},
		{"from a dash", "W\x02+\x02-a", nil, 0, "lowercase hex"},
	} {
		var acks strings.Builder
		got, err := Follow(strings.NewReader(tc.lifeline), &acks)
		if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
		}
		if acks.String() != strings.Repeat(string(rune(Ack)), tc.acks) {
			t.Errorf("%s: acks %q, want %d", tc.name, acks.String(), tc.acks)
		}
	}
	if _, err := AppendMessage(nil, Message{Op: Listed, ID: strings.Repeat("a", MaxID+1)}); err == nil {
		t.Error("AppendMessage encoded an id over MaxID")
	}
}

// FuzzReadMessage: whatever a lifeline holds, a message read from it
// encodes back to the same bytes.
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte("W\x02+\x02ab"))
	f.Add([]byte("W\x02-\x40" + strings.Repeat("0", 64)))
	f.Add([]byte("W\x02+\x0atriage-san"))
	f.Add([]byte("W\x01+\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadMessage(bytes.NewReader(b))
		if err != nil {
			return
		}
		again, err := AppendMessage(nil, m)
		if err != nil {
			t.Fatalf("read %q as %+v, cannot encode it: %v", b, m, err)
		}
		if !bytes.HasPrefix(b, again) {
			t.Fatalf("read %+v from %q, encodes as %q", m, b, again)
		}
	})
}

// TestIsName: a listed id is a name unless it is a full container id.
func TestIsName(t *testing.T) {
	for _, tc := range []struct {
		id   string
		name bool
	}{
		{strings.Repeat("0a", 32), false},
		{strings.Repeat("0a", 31), true},
		{"triage-sandbox-agent-" + strings.Repeat("0", 43), true},
		{strings.Repeat("0", 63) + "g", true},
	} {
		if got := IsName(tc.id); got != tc.name {
			t.Errorf("IsName(%q) = %v, want %v", tc.id, got, tc.name)
		}
	}
}
