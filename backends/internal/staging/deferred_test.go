package staging

import (
	"errors"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// stagedPolicy stages one writable directory.
func stagedPolicy() *policy.Policy {
	return &policy.Policy{Staging: policy.Staging{Size: 1 << 20, Inodes: 100},
		Mounts: []policy.Mount{{Path: "/w/repros", Kind: "dir"}}}
}

// TestDeferredStage: a deferred copy is sent once, when Stage is called;
// until then, and after a failed one, no command may run.
func TestDeferredStage(t *testing.T) {
	tests := []struct {
		name     string
		p        *policy.Policy
		opts     backends.StartOptions
		sendErr  error
		want     bool // deferred
		wantSend int  // sends over two Stage calls
		inPlace  bool // after the Stage calls
	}{
		{name: "not asked", p: stagedPolicy(), want: false, wantSend: 0, inPlace: true},
		{name: "nothing staged", p: &policy.Policy{}, opts: backends.StartOptions{DeferStaging: true}, want: false, wantSend: 0, inPlace: true},
		{name: "deferred", p: stagedPolicy(), opts: backends.StartOptions{DeferStaging: true}, want: true, wantSend: 1, inPlace: true},
		{name: "deferred, the copy fails", p: stagedPolicy(), opts: backends.StartOptions{DeferStaging: true}, sendErr: errors.New("too big"),
			want: true, wantSend: 1, inPlace: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d DeferredStage
			if got := d.Defer(tc.p, tc.opts); got != tc.want {
				t.Fatalf("Defer = %v, want %v", got, tc.want)
			}
			if tc.want && d.InPlace() == nil {
				t.Fatal("a command may run before the deferred copy")
			}
			sends := 0
			send := func() error { sends++; return tc.sendErr }
			first := d.Stage(send)
			if !errors.Is(first, tc.sendErr) {
				t.Errorf("Stage = %v, want %v", first, tc.sendErr)
			}
			second := d.Stage(send)
			if sends != tc.wantSend {
				t.Errorf("%d copies sent, want %d", sends, tc.wantSend)
			}
			if (d.InPlace() == nil) != tc.inPlace {
				t.Errorf("InPlace = %v, want in place %v", d.InPlace(), tc.inPlace)
			}
			if tc.sendErr != nil && second == nil {
				t.Error("a second Stage after a failed copy reports nothing")
			}
		})
	}
}
