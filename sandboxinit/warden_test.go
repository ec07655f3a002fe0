package sandboxinit

import (
	"slices"
	"testing"
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
		name        string
		self        int
		initAbove   bool
		noSubreaper bool
		started     []int
		want        []int
	}{
		{"under an init", 7, true, false, []int{20}, []int{30, 31, 32, 40, 41, 60}},
		{"without an init above", 7, false, false, []int{20}, []int{30, 31, 32, 60}},
		{"nothing started yet", 7, false, false, nil, []int{20, 21, 22, 30, 31, 32, 60}},
		{"the holder is pid 1", 1, false, false, []int{7}, []int{40, 41}},
		// Without subreapers, orphans may be a running supervisor's (50):
		// only the dead are reaped.
		{"no subreaper, a supervisor runs", 7, false, true, []int{20}, []int{60}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &warden{self: tt.self, initAbove: tt.initAbove, noSubreaper: tt.noSubreaper, started: map[int]bool{}}
			for _, pid := range tt.started {
				w.started[pid] = true
			}
			got := w.leftovers(procs)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("leftovers = %v, want %v", got, tt.want)
			}
		})
	}
}
