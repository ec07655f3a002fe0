package warm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Here is a keeper's backend for a front's `run` in the keeper's own
// process (KeeperOptions.Fast): its Start attaches to the keeper's
// session's sandbox, or takes one of its pool's, directly, where the
// CLI's `run` would dial the keeper's socket.
// A run in the keeper attached to itself over that socket before: a
// connection, a hello, the request and the result each encoded, sent and
// decoded, and two more wake-ups on the command's path. What the attached
// run sees is the same as a remote attach's: the same sandbox methods
// (id, scratch, warnings, discard, network decisions), the command run
// under the keeper's lock with its proxy renewed and ended (keeper.run),
// a failure as its text alone, a cancel as exit 130.
type Here struct {
	backends.Backend // the keeper's own backend, for all but Start
	k                *keeper
}

// Attaches implements backends.Attacher: the keeper's sandbox is the
// keeper's, started and swept beside by it.
func (h *Here) Attaches(*policy.Policy) bool { return true }

// Start implements backends.Backend: only the keeper's own policy is
// served (the fast path checked warm.Mine already; a second check costs
// nothing and keeps another policy from this sandbox whatever the caller).
// A pool's run takes a ready sandbox of its own (staged now, or started
// now when none is ready), which its Close discards.
func (h *Here) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	if !h.k.mineHashed(p, opts.WarmHash) {
		return nil, errors.New("warm: the run's policy is not this keeper's")
	}
	if h.k.session != nil {
		return &here{k: h.k, sb: h.k.session}, nil
	}
	end := phase.Begin(ctx, "keeper.take")
	sb, err := h.k.take(ctx)
	end()
	if err != nil {
		return nil, fmt.Errorf("warm: taking a sandbox of %s: %w", describe(h.k.p), err)
	}
	return &here{k: h.k, sb: sb, pooled: true}, nil
}

// here is the keeper's sandbox as an attached run sees it (as remote,
// without the connection): the session's, or a pooled one taken for this
// run alone.
type here struct {
	k       *keeper
	sb      backends.Sandbox
	network []egress.Decision
	// pooled: sb runs exactly one command and is discarded at Close.
	pooled bool
	ran    atomic.Bool
	closed sync.Once
}

func (s *here) ID() string                   { return s.sb.ID() }
func (s *here) Scratch() policy.ScratchPaths { return s.sb.Scratch() }
func (s *here) Warnings() []string           { return s.sb.Warnings() }

// CheckoutDiscarded implements backends.DiscardReporter.
func (s *here) CheckoutDiscarded() bool { return backends.CheckoutDiscarded(s.sb) }

// NetworkDecisions are the last command's proxy decisions (as remote's).
func (s *here) NetworkDecisions() []egress.Decision { return s.network }

// Close detaches: the session's sandbox stays for its next command; a
// pooled one is removed in the background (keeper.discard), as the
// keeper does when a remote attach ends, and never handed out again.
func (s *here) Close(ctx context.Context) error {
	if s.pooled {
		s.closed.Do(func() { s.k.discard(ctx, s.sb) })
	}
	return nil
}

// Exec implements backends.Sandbox as keeper.run does for a remote
// attach, and returns what remote.Exec would make of its result.
func (s *here) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	s.network = nil
	if err := backends.CheckArgv(cmd.Argv); err != nil {
		return backends.Result{}, err
	}
	if s.pooled && !s.ran.CompareAndSwap(false, true) {
		return backends.Result{}, errors.New("a pooled sandbox runs exactly one command")
	}
	// What a request carries, no more (keeper.run; stdin never comes here:
	// --stdin falls back).
	cmd = backends.Command{Argv: cmd.Argv, Workdir: cmd.Workdir, Timeout: cmd.Timeout}
	s.k.execMu.Lock()
	res, network, err := s.k.exec(ctx, s.sb, cmd, out)
	s.k.execMu.Unlock()
	if len(network) > 0 {
		// As many as a result frame carries (keeper.run).
		network = result{Network: network}.Bounded().Network
	}
	if ctx.Err() != nil {
		// As remote: a cancel detaches, and the keeper kills the tree.
		return backends.Result{Sandbox: s.sb.ID(), Canceled: true, ExitCode: 130}, nil
	}
	s.network = network
	if err != nil {
		// Its text alone, as it crosses the socket.
		return res, errors.New(err.Error())
	}
	return res, nil
}
