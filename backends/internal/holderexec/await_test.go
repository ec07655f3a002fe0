package holderexec

import (
	"context"
	"errors"
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
