package holderexec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestAwaitHolderAwaiting: a start that defers its copy is done once the
// holder says it awaits it; a start that does not waits for ready.
func TestAwaitHolderAwaiting(t *testing.T) {
	var out SmallBuffer
	_ = protocol.WriteStatus(&out, protocol.Status{State: protocol.StateAwaitingStage})
	exited := make(chan struct{})
	if err := AwaitHolderAwaiting(context.Background(), &out, exited); err != nil {
		t.Fatalf("AwaitHolderAwaiting: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := AwaitHolder(ctx, &out, exited); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AwaitHolder took awaiting for ready: %v", err)
	}
	_ = protocol.WriteStatus(&out, protocol.Status{State: protocol.StateStagingFailed, Detail: "too big"})
	if err := AwaitHolder(context.Background(), &out, exited); err == nil || !strings.Contains(err.Error(), "too big") {
		t.Fatalf("AwaitHolder after a failed copy: %v", err)
	}
}

// TestAwaitHolderOfAnotherVersion: a holder of another build (a kubernetes
// image's inside binary) that says ready fails the start with one line
// that says what to rebuild; this build's ready starts.
func TestAwaitHolderOfAnotherVersion(t *testing.T) {
	for _, tt := range []struct {
		line string
		want string
	}{
		{`triage-sandbox-status {"state":"ready"}`, "speaks protocol 0, this triage-sandbox speaks"},
		{`triage-sandbox-status {"protocol":7,"state":"awaiting_stage","new":true}`, "speaks protocol 7, this triage-sandbox speaks"},
		{fmt.Sprintf(`triage-sandbox-status {"protocol":%d,"state":"ready"}`, protocol.Version), ""},
	} {
		for _, await := range []func(context.Context, *SmallBuffer, <-chan struct{}) error{AwaitHolder, AwaitHolderAwaiting} {
			var out SmallBuffer
			_, _ = out.Write([]byte("tini: started\n" + tt.line + "\n"))
			err := await(context.Background(), &out, make(chan struct{}))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("%s: %v", tt.line, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "rebuild both") {
				t.Fatalf("%s: %v, want %q", tt.line, err, tt.want)
			}
		}
	}
}

// TestAwaitLastWords: a holder's word that reaches its buffer after its end
// is known (the stream it travels is not what tells of the end) is still
// its word; one that said nothing has ended, once the grace has passed.
func TestAwaitLastWords(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration // when the word comes after the end; 0: none
		want  string
	}{
		{name: "word after the end", after: 50 * time.Millisecond, want: "too big"},
		{name: "nothing said"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out SmallBuffer
			exited := make(chan struct{})
			close(exited)
			if tc.after > 0 {
				go func() {
					time.Sleep(tc.after)
					_ = protocol.WriteStatus(&out, protocol.Status{State: protocol.StateStagingFailed, Detail: "too big"})
				}()
			}
			err := AwaitHolder(context.Background(), &out, exited)
			switch {
			case tc.want == "" && !errors.Is(err, ErrHolderEnded):
				t.Errorf("AwaitHolder: %v, want ErrHolderEnded", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("AwaitHolder: %v, want the word %q", err, tc.want)
			}
		})
	}
}
