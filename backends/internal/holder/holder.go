// Package holder is the host's side of a sandbox's holder process, written
// once for every backend that has one (docker, oci, local, kubernetes):
// what the holder printed and whether it ended (holderexec.Holder), the
// staged copy sent in at the start or later (backends.Stager), the wait
// for the holder's word, the caller's warnings and a Close that runs once.
// A backend embeds a *Base and supplies only what differs: the stream the
// bytes reach the holder by (SetLifeline) and how it explains an end.
package holder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/staging"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Config is what a backend tells the base about itself.
type Config struct {
	// Noun names the sandbox in errors: "the sandbox", "the local sandbox".
	Noun string
	// Setup bounds the start's wait for the holder (the backend's context
	// carries it) and a later Stage.
	Setup time.Duration
	// Ended explains a holder that ended before its word (nil: Noun "ended
	// while starting" and what the holder said).
	Ended func() error
	// StageErr adds what the backend knows to a failed Stage (nil: as it
	// is); docker's asks whether its daemon still answers.
	StageErr func(ctx context.Context, err error) error
	// NoReadyWaitUnstaged: a start with nothing to stage does not wait for
	// the holder's ready (docker: the daemon starts an exec in a running
	// container, so the wait would only cost the start its overlap).
	NoReadyWaitUnstaged bool
}

// Base is the host's side of one sandbox's holder. Its zero value is not
// usable: make it with New.
type Base struct {
	holderexec.Holder
	// Manifest is what the host's staged paths held when last copied (the
	// copy in, then each copy back).
	Manifest stage.Manifest
	// Mu orders the staged copy and commands that share one stream to the
	// holder: a command runs under it, and so does a later Stage.
	Mu sync.Mutex

	cfg      Config
	p        *policy.Policy
	lifeline io.Writer
	staging  staging.DeferredStage

	closeOnce sync.Once
	closeErr  error
}

// New returns the base of a sandbox for p whose holder has not ended.
func New(p *policy.Policy, cfg Config) *Base {
	if cfg.Noun == "" {
		cfg.Noun = "the sandbox"
	}
	return &Base{Holder: holderexec.Holder{Gone: make(chan struct{})}, cfg: cfg, p: p}
}

// SetLifeline names the holder's stdin, where the staged copy goes ahead
// of the lifeline. Set before Ready.
func (b *Base) SetLifeline(w io.Writer) { b.lifeline = w }

// Ready waits for a just-started holder: with opts.DeferStaging until it
// awaits its staged copy, else with the copy sent until it is in place.
func (b *Base) Ready(ctx context.Context, opts backends.StartOptions) error {
	if b.staging.Defer(b.p, opts) {
		return b.Await(ctx, holderexec.AwaitHolderAwaiting)
	}
	return b.stageIn(ctx)
}

var _ backends.Stager = (*Base)(nil)

// Stage implements backends.Stager: the copy a start with DeferStaging
// left for later, taken now, under Mu and within Config.Setup. It is not
// cut half-way by the caller's cancel: a half copy would leave the sandbox
// unusable, and the bound ends it anyway.
func (b *Base) Stage(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	return b.staging.StageWithin(ctx, &b.Mu, b.cfg.Setup, func(ctx context.Context) error {
		err := b.stageIn(ctx)
		if err != nil && b.cfg.StageErr != nil {
			err = b.cfg.StageErr(ctx, err)
		}
		return err
	})
}

// InPlace says why no command may run yet (nil: the staged copy is in).
func (b *Base) InPlace() error { return b.staging.InPlace() }

// Admit says why cmd may not run now (nil: it may): the holder ended
// (ended explains how), cmd has no program, or the staged copy is not in
// place.
func (b *Base) Admit(cmd backends.Command, ended func() error) error {
	if b.Ended() {
		return ended()
	}
	if err := backends.CheckArgv(cmd.Argv); err != nil {
		return err
	}
	return b.InPlace()
}

// stageIn sends the staged copy to the holder and waits until it says the
// copy is in place.
func (b *Base) stageIn(ctx context.Context) error {
	if b.lifeline == nil {
		return errors.New("the sandbox's holder has no stdin to take its staged copy")
	}
	stopAbort := b.abortCopyAtEnd()
	m, err := staging.StageIn(ctx, b.lifeline, b.p)
	stopAbort()
	if err != nil {
		if refused := b.refusedCopy(ctx); refused != nil {
			return refused
		}
		return fmt.Errorf("%w%s", err, b.Said())
	}
	if m == nil && b.cfg.NoReadyWaitUnstaged {
		return nil
	}
	b.Manifest = m
	return b.Await(ctx, holderexec.AwaitHolder)
}

// abortCopyAtEnd breaks off a write of the staged copy still blocked
// when the holder ends (a deadline of now on the lifeline, where it takes
// one): a pipe to a holder that ended fails at once, but a daemon's attach
// stream (docker's) may take the bytes of a container that is gone and
// block for minutes (127 s here, for a copy over writable_size). The
// returned func stops the watch.
func (b *Base) abortCopyAtEnd() (stop func()) {
	d, ok := b.lifeline.(interface{ SetWriteDeadline(time.Time) error })
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-b.Gone:
			_ = d.SetWriteDeadline(time.Now())
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// refusedCopy is why the holder refused a staged copy whose write broke
// off, when it said so (nil: it did not, within a second). A holder that
// cannot take the copy (its writable space is full) says why and ends, and
// the host's write then fails with a broken pipe: its word, not the pipe's,
// is the error, with what to do about it.
func (b *Base) refusedCopy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := holderexec.AwaitHolder(ctx, &b.Out, b.Gone)
	if err == nil || errors.Is(err, holderexec.ErrHolderEnded) || ctx.Err() != nil {
		return nil
	}
	return err
}

// Await waits for the holder's word with await (holderexec.AwaitHolder or
// AwaitHolderAwaiting) and explains a holder that ended or a start that
// ran out of time.
func (b *Base) Await(ctx context.Context, await func(context.Context, *holderexec.SmallBuffer, <-chan struct{}) error) error {
	switch err := await(ctx, &b.Out, b.Gone); {
	case errors.Is(err, holderexec.ErrHolderEnded):
		if b.cfg.Ended != nil {
			return b.cfg.Ended()
		}
		return fmt.Errorf("%s ended while starting%s", b.cfg.Noun, b.Said())
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s did not start within %s%s", b.cfg.Noun, b.cfg.Setup, b.Said())
	default:
		return err
	}
}

// CloseOnce runs release the first time it is called and returns its
// error every time (backends.Sandbox.Close is idempotent). A failure says
// that `gc` finishes the work and becomes one of the warnings.
func (b *Base) CloseOnce(release func() error) error {
	b.closeOnce.Do(func() {
		if err := release(); err != nil {
			b.closeErr = fmt.Errorf("%w (run `triage-sandbox gc`)", err)
			b.Warn(b.closeErr.Error())
		}
	})
	return b.closeErr
}
