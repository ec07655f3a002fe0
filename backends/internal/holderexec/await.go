package holderexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// ErrHolderEnded: the holder ended before it said it was ready.
var ErrHolderEnded = errors.New("the sandbox ended before it was ready")

// AwaitHolder waits until the holder's status (out) says it is ready with
// its staged copy in place, says why it could not be, or the holder ended
// (ErrHolderEnded) or ctx did.
func AwaitHolder(ctx context.Context, out *SmallBuffer, exited <-chan struct{}) error {
	return awaitStatus(ctx, out, exited, protocol.StateReady)
}

// AwaitHolderAwaiting is AwaitHolder for a holder whose staged copy is
// deferred (backends.StartOptions.DeferStaging): it waits until the holder says it
// awaits its copy (or is ready, having nothing to stage).
func AwaitHolderAwaiting(ctx context.Context, out *SmallBuffer, exited <-chan struct{}) error {
	return awaitStatus(ctx, out, exited, protocol.StateAwaitingStage, protocol.StateReady)
}

func awaitStatus(ctx context.Context, out *SmallBuffer, exited <-chan struct{}, want ...protocol.State) error {
	states := append(want, protocol.StateHolderFailed, protocol.StateStagingFailed)
	// The buffer tells of each write; the tick is only a backstop.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	changed := out.Changed()
	for {
		if s, ok := protocol.First(out.Bytes(), states...); ok {
			return holderStatusErr(s)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return lastWords(out, changed, states)
		case <-changed:
		case <-tick.C:
		}
	}
}

// lastWordsGrace bounds the wait, once a holder is known to have ended,
// for a word it said just before: the word travels a stream (a pipe's
// copier, docker's attach) that the news of the end does not wait for, and
// under load came after it (a copy over writable_size then read as a
// holder that ended with nothing said, 1 run in about 30).
const lastWordsGrace = 500 * time.Millisecond

// lastWords is the status of a holder that ended, or ErrHolderEnded when
// it said none within lastWordsGrace.
func lastWords(out *SmallBuffer, changed <-chan struct{}, states []protocol.State) error {
	grace := time.NewTimer(lastWordsGrace)
	defer grace.Stop()
	for {
		if s, ok := protocol.First(out.Bytes(), states...); ok {
			return holderStatusErr(s)
		}
		select {
		case <-changed:
		case <-grace.C:
			if s, ok := protocol.First(out.Bytes(), states...); ok {
				return holderStatusErr(s)
			}
			return ErrHolderEnded
		}
	}
}

// holderStatusErr is what a holder's first start status means to Start.
// A status of another protocol version fails whatever it says: the inside
// binary (a kubernetes image's, a stale copy) is of another build.
func holderStatusErr(s protocol.Status) error {
	if err := s.Mismatch("the sandbox's holder (its inside binary)"); err != nil {
		return err
	}
	switch s.State {
	case protocol.StateReady, protocol.StateAwaitingStage:
		return nil
	case protocol.StateStagingFailed:
		return fmt.Errorf("copying the writable paths into the sandbox: %s (raise [sandbox] writable_size or writable_inodes, or clean up the writable paths)", s.Detail)
	default:
		return fmt.Errorf("the sandbox's holder: %s", s.Detail)
	}
}
