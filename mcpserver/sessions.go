package mcpserver

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// sessionLifetime bounds a session's sandbox whatever else happens (its
// TTL, as a keeper's); idle expiry normally ends it long before.
const sessionLifetime = 12 * time.Hour

// Defaults of [sandbox.mcp]. A session pins its sandbox (the agent's 1 GiB
// of memory by default, its tmpfs, a watcher) until end_session or
// warm_idle after its last command, and a model steered by an issue's text
// picks the names: 4 is room for an agent's real work (one session per
// line of inquiry, rarely more than two) at 4 GiB in the worst case,
// beside two reproducers' 2 GiB each, on a 16 GiB CI runner. Two starts
// at once keep the machine's cores for the commands.
const (
	DefaultMaxSessions = 4
	DefaultMaxStarting = 2
	DefaultMaxRuns     = 2
)

// session is one named agent session: one sandbox, one command at a time
// (as a keeper runs them).
type session struct {
	mu       sync.Mutex
	sess     *sandbox.Session
	hash     string
	idle     time.Duration
	lastUsed time.Time
	ended    bool
}

// limits are the server's bounds on its sandboxes.
type limits struct {
	// maxSessions bounds the named sessions alive at once, those being
	// started included.
	maxSessions int
	// where names the key that set maxSessions, for the refusal.
	where string
	// idle is how long an unused session lives, for the refusal.
	idle time.Duration
}

// sessions are the server's named sessions.
type sessions struct {
	mu     sync.Mutex
	byName map[string]*session
	limits limits
	// starting holds a slot for each sandbox being started.
	starting slots
}

func newSessions(l limits, starting slots) *sessions {
	return &sessions{byName: map[string]*session{}, limits: l, starting: starting}
}

// entry is the named session's entry, made when the name is new and
// fewer than maxSessions are alive; else the refusal says which are.
func (t *sessions) entry(name string) (*session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byName[name]
	if ok {
		return e, nil
	}
	if len(t.byName) >= t.limits.maxSessions {
		return nil, t.full(name)
	}
	e = &session{}
	t.byName[name] = e
	return e, nil
}

// full is the refusal of a new session: what the model can do about it.
// It is called with t.mu held.
func (t *sessions) full(name string) error {
	live := make([]string, 0, len(t.byName))
	for n := range t.byName {
		live = append(live, n)
	}
	sort.Strings(live)
	return fmt.Errorf("session %s not started: this server runs at most %d sessions at once (%s), and %s are running; "+
		"run in one of them, or end one with the %s tool (e.g. {\"session\": %q}); an unused session also ends by itself after %s",
		name, t.limits.maxSessions, t.limits.where, strings.Join(live, ", "), ToolEndSession, live[0], t.limits.idle)
}

// exec runs req in the named session's sandbox, starting it under base
// on first use. The working directory is the command's (req.Command), so
// it does not change the sandbox. A policy whose WarmHash changed since
// the sandbox started (a file the policy reads, such as the interpreter's
// environment) ends it and starts a new one, with a warning: the old
// sandbox must not run a command of another policy. Files that appeared
// at the workspace root do not change it (policy.WarmHash). A session
// whose sandbox could not start is gone: it holds no place.
func (t *sessions) exec(ctx, base context.Context, b backends.Backend, req sandbox.Request) (sandbox.Outcome, error) {
	p := req.Policy
	name := p.Warm.Session
	e, err := t.lock(name)
	if err != nil {
		return sandbox.Outcome{}, sandbox.RecordRefusal(req, err)
	}
	defer e.mu.Unlock()
	var notes []string
	if e.sess != nil && e.hash != p.WarmHash() {
		notes = append(notes, fmt.Sprintf("session %s: the policy changed (%s → %s); its sandbox was ended and a new one started",
			name, short(e.hash), short(p.WarmHash())))
		if err := e.sess.Close(context.WithoutCancel(base)); err != nil {
			notes = append(notes, "ending the old sandbox: "+err.Error())
		}
		e.sess = nil
	}
	if e.sess == nil {
		s, err := t.start(ctx, base, b, req)
		if err != nil {
			t.forget(name, e)
			return sandbox.Outcome{Warnings: notes}, sandbox.RecordRefusal(req, err)
		}
		e.sess, e.hash, e.idle = s, p.WarmHash(), p.Warm.Idle
		notes = append(notes, s.Sandbox().Warnings()...)
	}
	out, err := e.sess.Exec(ctx, req)
	e.lastUsed = time.Now()
	out.Warnings = append(notes, out.Warnings...)
	return out, err
}

// start starts a session's sandbox under base once a start slot is free;
// the wait ends with the call (ctx).
func (t *sessions) start(ctx, base context.Context, b backends.Backend, req sandbox.Request) (*sandbox.Session, error) {
	release, err := t.starting.take(ctx)
	if err != nil {
		return nil, fmt.Errorf("session %s: waiting to start its sandbox: %w", req.Policy.Warm.Session, err)
	}
	defer release()
	return sandbox.Start(base, b, req.Policy, backends.StartOptions{TTL: sessionLifetime})
}

// forget removes a session whose sandbox is not running, with e locked:
// a caller waiting for it gets a new entry.
func (t *sessions) forget(name string, e *session) {
	e.ended = true
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byName[name] == e {
		delete(t.byName, name)
	}
}

// lock is the named session's entry, locked; one ended while this call
// waited for it is replaced by a new entry.
func (t *sessions) lock(name string) (*session, error) {
	for {
		e, err := t.entry(name)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		if !e.ended {
			return e, nil
		}
		e.mu.Unlock()
	}
}

// end ends the named session; it reports whether one was running.
func (t *sessions) end(ctx context.Context, name string) (bool, error) {
	t.mu.Lock()
	e, ok := t.byName[name]
	delete(t.byName, name)
	t.mu.Unlock()
	if !ok {
		return false, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended = true
	if e.sess == nil {
		return false, nil
	}
	err := e.sess.Close(ctx)
	e.sess = nil
	return true, err
}

// names lists the sessions, sorted.
func (t *sessions) names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.byName))
	for n := range t.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// endAll ends every session, concurrently, and waits for each.
func (t *sessions) endAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range t.names() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = t.end(ctx, n)
		}()
	}
	wg.Wait()
}

// expire ends the sessions unused for longer than their policy's idle
// time, until ctx ends. A session running a command is not idle.
func (t *sessions) expire(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			for _, n := range t.idleAt(now) {
				_, _ = t.end(context.WithoutCancel(ctx), n)
			}
		}
	}
}

// expireEvery is how often sessions are looked at: a tenth of the idle
// time, so one ends at most 10% late, between 1 s and 30 s.
func expireEvery(idle time.Duration) time.Duration {
	return min(max(idle/10, time.Second), 30*time.Second)
}

// idleAt lists the sessions idle at now; one busy with a command (its
// lock held) is skipped.
func (t *sessions) idleAt(now time.Time) []string {
	var out []string
	for _, n := range t.names() {
		t.mu.Lock()
		e := t.byName[n]
		t.mu.Unlock()
		if e == nil || !e.mu.TryLock() {
			continue
		}
		if e.sess != nil && e.idle > 0 && now.Sub(e.lastUsed) > e.idle {
			out = append(out, n)
		}
		e.mu.Unlock()
	}
	return out
}

// slots bounds how many of something happen at once.
type slots chan struct{}

// take waits for a free slot, or until ctx ends; release frees it (a
// second call does nothing).
func (s slots) take(ctx context.Context) (release func(), err error) {
	select {
	case s <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-s }) }, nil
}

func short(hash string) string {
	h := strings.TrimPrefix(hash, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
