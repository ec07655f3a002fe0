package warm

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/warm/fastpath"
)

// frontListener is a pool keeper's socket for fronts (fastpath's
// FrontSocket): a connection there is a front's `run`, never an attach,
// so the keeper takes no sandbox before it knows the run is its own.
type frontListener struct {
	ln   net.Listener
	path string
	mine os.FileInfo
}

// listenFront listens on a pool keeper's front socket, its own user's
// only; nil for a session's keeper or one that runs no front's command.
func (k *keeper) listenFront() (*frontListener, error) {
	if k.session != nil || k.p.Warm.Session != "" || k.o.Fast == nil {
		return nil, nil
	}
	path := fastpath.FrontSocket(k.paths.dir, k.paths.k)
	_ = os.Remove(path) // a dead keeper's
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("warm: listening for fronts: %w", err)
	}
	f := &frontListener{ln: ln, path: path}
	if f.mine, err = os.Stat(path); err == nil {
		err = os.Chmod(path, 0o600)
	}
	if err != nil {
		_ = ln.Close()
		f.unlisten()
		return nil, fmt.Errorf("warm: the front socket: %w", err)
	}
	return f, nil
}

// unlisten removes the front socket while it is still this keeper's.
func (f *frontListener) unlisten() {
	if fi, err := os.Stat(f.path); err == nil && f.mine != nil && os.SameFile(fi, f.mine) {
		_ = os.Remove(f.path)
	}
}

// serveFront is one front's `run` on a pool's front socket: a hello with
// this build's version (no sandbox: none is taken yet), then the front's
// request, run as the CLI's `run` would (keeper.fast), whose start takes
// a ready sandbox of the pool (Here.Start) and whose end discards it.
func (k *keeper) serveFront(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	phase.Mark(ctx, "keeper.accepted")
	c := &keeperConn{conn: conn}
	// The hello's ID names the pool, not a sandbox: a front reads only its
	// version.
	if err := c.sendJSON(fHello, &hello{ID: PoolName(k.p.Role), PolicyHash: k.warmHash}); err != nil {
		return
	}
	frames, gone := readFrames(ctx, conn)
	select {
	case f := <-frames:
		if f.t == fastpath.FRequest {
			k.fast(ctx, c, f.b, frames, gone, true)
		}
	case <-gone:
	case <-ctx.Done():
	}
}
