package supervise

import (
	"slices"
	"testing"
)

func TestStrays(t *testing.T) {
	const self = 50
	tests := []struct {
		name         string
		procs        []proc
		pid1IsHolder bool
		want         []int
	}{
		{"gVisor under oci: the holder is pid 1, orphans are its children",
			[]proc{{pid: 1}, {pid: self}, {pid: 30, ppid: 1, start: 900}, {pid: 31, ppid: 30, start: 901}, {pid: 32, ppid: 1, state: 'Z'}},
			true, []int{30, 31}},
		{"gVisor under docker: the holder is the init's eldest child",
			[]proc{{pid: 1}, {pid: 2, ppid: 1, start: 10}, {pid: self}, {pid: 40, ppid: 1, start: 500}, {pid: 41, ppid: 40, start: 501}},
			false, []int{40, 41}},
		{"a leftover that started with the holder's tick loses on pid",
			[]proc{{pid: 1}, {pid: 2, ppid: 1, start: 10}, {pid: 3, ppid: 1, start: 10}, {pid: self}},
			false, []int{3}},
		{"another supervisor runs: nothing is a stray",
			[]proc{{pid: 1}, {pid: self}, {pid: 60}, {pid: 61, ppid: 1, start: 900}},
			true, nil},
		{"nothing left", []proc{{pid: 1}, {pid: self}}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strays(tt.procs, self, tt.pid1IsHolder)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("strays = %v, want %v", got, tt.want)
			}
		})
	}
}
