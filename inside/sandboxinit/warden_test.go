package sandboxinit

import (
	"slices"
	"testing"
	"time"
)

func TestWardenLeftovers(t *testing.T) {
	// The holder is 7 under an init (1); it started supervisor 20, whose
	// command 21 has a child 22. 30 is a command whose supervisor died:
	// it came to the holder with its child 31. 40 came to the init above.
	// 50 is a supervisor a runtime exec started (its parent is outside).
	// 60 is a dead child of the holder.
	procs := map[int]proc{
		1: {ppid: 0}, 7: {ppid: 1},
		20: {ppid: 7}, 21: {ppid: 20}, 22: {ppid: 21},
		30: {ppid: 7}, 31: {ppid: 30}, 32: {ppid: 31, zombie: true},
		40: {ppid: 1}, 41: {ppid: 40},
		50: {ppid: 0}, 51: {ppid: 50},
		60: {ppid: 7, zombie: true},
	}
	tests := []struct {
		name      string
		self      int
		initAbove bool
		settled   bool
		started   []int
		want      []int
	}{
		{"under an init", 7, true, true, []int{20}, []int{30, 31, 32, 40, 41, 60}},
		{"without an init above", 7, false, true, []int{20}, []int{30, 31, 32, 60}},
		{"nothing started yet", 7, false, true, nil, []int{20, 21, 22, 30, 31, 32, 60}},
		{"the holder is pid 1", 1, false, true, []int{7}, []int{40, 41}},
		// Without subreapers, orphans may be a running supervisor's (50):
		// only the dead are reaped.
		{"not settled", 7, false, false, []int{20}, []int{60}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &warden{self: tt.self, initAbove: tt.initAbove, started: map[int]bool{}}
			for _, pid := range tt.started {
				w.started[pid] = true
			}
			got := w.leftovers(procs, tt.settled)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("leftovers = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWardenSettled: without subreapers, the holder's orphans are taken for
// leftovers only after no supervisor was seen for a whole poll, so that one
// scan that missed a live supervisor does not kill its command's orphans.
func TestWardenSettled(t *testing.T) {
	running := map[int]proc{1: {ppid: 0}, 19: {ppid: 0}, 30: {ppid: 1}}
	none := map[int]proc{1: {ppid: 0}, 30: {ppid: 1}}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		procs map[int]proc
		at    time.Duration
		want  bool
	}{
		{running, 0, false},
		{none, 10 * time.Millisecond, false},              // the first quiet scan
		{none, 10*time.Millisecond + wardenPoll/2, false}, // not a whole poll yet
		{running, 10*time.Millisecond + wardenPoll, false},
		{none, 20*time.Millisecond + wardenPoll, false}, // quiet again: starts over
		{none, 20*time.Millisecond + 2*wardenPoll, true},
		{none, 20*time.Millisecond + 3*wardenPoll, true},
	}
	w := &warden{self: 1, noSubreaper: true, started: map[int]bool{}}
	for i, s := range steps {
		if got := w.settled(s.procs, t0.Add(s.at)); got != s.want {
			t.Fatalf("step %d: settled = %v, want %v", i, got, s.want)
		}
	}
	w = &warden{self: 1}
	if w.settled(running, t0) {
		t.Fatal("with subreapers, orphans while a runtime-started supervisor runs may be its command's")
	}
	if !w.settled(none, t0) {
		t.Fatal("with subreapers and no supervisor running, the holder's orphans are leftovers")
	}
}

// TestWardenPollFollowsTheChannel: the polls slow to the backstop while
// every command comes through the control channel (each supervisor is the
// holder's child, whose end starts a sweep), and are fast again once the
// channel ends; without subreapers they never slow (orphans are told apart
// only by polls there).
func TestWardenPollFollowsTheChannel(t *testing.T) {
	tests := []struct {
		name        string
		noSubreaper bool
		steps       []func(*warden)
		want        time.Duration
	}{
		{"no channel", false, nil, wardenPoll},
		{"channel up", false, []func(*warden){(*warden).commandsThroughHolder}, wardenBackstop},
		{"channel ended", false, []func(*warden){(*warden).commandsThroughHolder, (*warden).commandsByRuntime}, wardenPoll},
		{"channel up, no subreapers", true, []func(*warden){(*warden).commandsThroughHolder}, wardenPoll},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &warden{self: 1, noSubreaper: tt.noSubreaper, started: map[int]bool{}, changed: make(chan struct{}, 1)}
			for _, step := range tt.steps {
				step(w)
			}
			if got := w.interval(); got != tt.want {
				t.Fatalf("interval = %v, want %v", got, tt.want)
			}
			if len(tt.steps) > 0 && !tt.noSubreaper && len(w.changed) != 1 {
				t.Fatal("the watch was not told the interval changed")
			}
		})
	}
}
