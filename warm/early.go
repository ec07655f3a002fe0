package warm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"strings"
	"sync/atomic"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Early is a connection to a session's keeper begun before the policy is
// built: the keeper wakes and says hello while `run` still checks the
// host's credential paths, off the command's path. It sends nothing:
// Start takes it only when it reached the keeper the finished policy names
// and that keeper holds a sandbox of exactly that policy (the hash check
// every connection gets); anything else is closed and Start goes its
// usual way, under the lock.
type Early struct {
	dir, k string
	// used: taken or closed; an Early serves one Start.
	used atomic.Bool
	done chan struct{}
	conn net.Conn
	h    hello
	err  error
}

// DialEarly begins attaching to the keeper of session in the workspace
// root for role, in dir. A pool's keeper hands each connection a
// sandbox of its own, so only a session is dialled early.
func DialEarly(dir, root string, role profiles.Role, session string) *Early {
	e := &Early{dir: dir, k: sessionKey(root, role, session), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		// As Start: a socket is trusted only in a directory that is ours
		// alone.
		if e.err = hostfs.PrivateDir(dir); e.err == nil {
			e.conn, e.h, e.err = dial(paths{dir, e.k})
		}
	}()
	return e
}

// take returns the early connection when it is p's session keeper's and
// its sandbox runs p; otherwise it closes it and reports false.
func (e *Early) take(ctx context.Context, dir string, p *policy.Policy) (net.Conn, hello, bool) {
	if e == nil || !e.used.CompareAndSwap(false, true) {
		return nil, hello{}, false
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		e.drop()
		return nil, hello{}, false
	}
	if e.err != nil || e.dir != dir || p.Warm.Session == "" || e.k != key(p) || e.h.Error != "" || e.h.PolicyHash != p.WarmHash() {
		e.drop()
		return nil, hello{}, false
	}
	return e.conn, e.h, true
}

// Close drops the early connection (once it is made, without waiting for
// it); nil-safe.
func (e *Early) Close() {
	if e != nil && e.used.CompareAndSwap(false, true) {
		e.drop()
	}
}

func (e *Early) drop() {
	go func() {
		<-e.done
		if e.conn != nil {
			_ = e.conn.Close()
		}
	}()
}

// sessionKey is key for a session's policy.
func sessionKey(root string, role profiles.Role, session string) string {
	id := strings.Join([]string{KindSession, root, string(role), session}, "\x00")
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}
