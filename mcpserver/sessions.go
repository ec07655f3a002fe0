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

// Defaults of [sandbox.mcp].
const (
	DefaultMaxSessions = 4
	DefaultMaxStarting = 2
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

// sessions are the server's named sessions.
type sessions struct {
	mu     sync.Mutex
	byName map[string]*session
}

func newSessions() *sessions { return &sessions{byName: map[string]*session{}} }

func (t *sessions) entry(name string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byName[name]
	if !ok {
		e = &session{}
		t.byName[name] = e
	}
	return e
}

// exec runs req in the named session's sandbox, starting it under base
// on first use. The working directory is the command's (req.Command), so
// it does not change the sandbox. A policy whose WarmHash changed since
// the sandbox started (a file the policy reads, such as the interpreter's
// environment) ends it and starts a new one, with a warning: the old
// sandbox must not run a command of another policy. Files that appeared
// at the workspace root do not change it (policy.WarmHash).
func (t *sessions) exec(ctx, base context.Context, b backends.Backend, req sandbox.Request) (sandbox.Outcome, error) {
	p := req.Policy
	e := t.lock(p.Warm.Session)
	defer e.mu.Unlock()
	var notes []string
	if e.sess != nil && e.hash != p.WarmHash() {
		notes = append(notes, fmt.Sprintf("session %s: the policy changed (%s → %s); its sandbox was ended and a new one started",
			p.Warm.Session, short(e.hash), short(p.WarmHash())))
		if err := e.sess.Close(context.WithoutCancel(base)); err != nil {
			notes = append(notes, "ending the old sandbox: "+err.Error())
		}
		e.sess = nil
	}
	if e.sess == nil {
		s, err := sandbox.Start(base, b, p, backends.StartOptions{TTL: sessionLifetime})
		if err != nil {
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

// lock is the named session's entry, locked; one ended while this call
// waited for it is replaced by a new entry.
func (t *sessions) lock(name string) *session {
	for {
		e := t.entry(name)
		e.mu.Lock()
		if !e.ended {
			return e
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

func short(hash string) string {
	h := strings.TrimPrefix(hash, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
