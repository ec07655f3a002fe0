//go:build unix

package control

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pair makes the channel: the host's end and the holder's end, which the
// caller passes to the sandbox (an inherited descriptor) and then closes.
func Pair() (host, holder *os.File, err error) {
	// darwin has no SOCK_CLOEXEC: hold ForkLock, as the standard library
	// does, so no process starts between the socketpair and the flag.
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("making the control channel: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "control-host"), os.NewFile(uintptr(fds[1]), "control-holder"), nil
}

// Client is the host's end of the channel.
type Client struct {
	conn *net.UnixConn

	mu      sync.Mutex // guards what follows and serialises sends
	nextID  uint64
	waiters map[uint64]chan reply
	err     error // set once the channel ended
	done    chan struct{}
}

// NewClient takes over f (the host's end from Pair).
func NewClient(f *os.File) (*Client, error) {
	fc, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("the control channel: %w", err)
	}
	conn, ok := fc.(*net.UnixConn)
	if !ok {
		_ = fc.Close()
		return nil, fmt.Errorf("the control channel is a %T, not a unix socket", fc)
	}
	return NewClientConn(conn), nil
}

// Close ends the channel; processes already started keep running (their
// own lifelines end them).
func (c *Client) Close() error {
	err := c.conn.Close()
	<-c.done
	return err
}

func (c *Client) read() {
	defer close(c.done)
	buf := make([]byte, maxMessage)
	for {
		n, _, _, _, err := c.conn.ReadMsgUnix(buf, nil)
		if err == nil && n == 0 {
			err = ErrClosed
		}
		if err != nil {
			c.fail(err)
			return
		}
		r, err := decodeReply(buf[:n])
		if err != nil {
			c.fail(fmt.Errorf("the holder sent an unreadable reply: %w", err))
			return
		}
		c.mu.Lock()
		w := c.waiters[r.ID]
		if r.Exited || r.Error != "" {
			delete(c.waiters, r.ID)
		}
		c.mu.Unlock()
		if w != nil {
			w <- r
		}
	}
}

// fail ends every waiter: the holder is gone, and so are its processes.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	for id, w := range c.waiters {
		close(w)
		delete(c.waiters, id)
	}
}

// Process is a process the holder started.
type Process struct {
	PID     int
	replies chan reply
	c       *Client
}

// Start asks the holder to start argv with files as its descriptors 0, 1,
// 2, 3...; dir and env replace the holder's own when set. It returns once
// the holder started it (or says why it could not). The caller may close
// its copies of files once Start returns.
func (c *Client) Start(ctx context.Context, argv []string, dir string, env []string, files []*os.File) (*Process, error) {
	if len(files) > maxFiles {
		return nil, fmt.Errorf("%d descriptors is over the %d a request may pass", len(files), maxFiles)
	}
	replies := make(chan reply, 2)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.nextID++
	id := c.nextID
	c.waiters[id] = replies
	msg, err := encode(request{ID: id, Argv: argv, Dir: dir, Env: env})
	if err == nil {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		_, _, err = c.conn.WriteMsgUnix(msg, unix.UnixRights(fds...), nil)
	}
	if err != nil {
		delete(c.waiters, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("sending the command to the holder: %w", err)
	}
	c.mu.Unlock()
	select {
	case r, ok := <-replies:
		if !ok {
			return nil, c.closedErr()
		}
		if r.Error != "" {
			return nil, fmt.Errorf("the holder could not start the command: %s", r.Error)
		}
		return &Process{PID: r.PID, replies: replies, c: c}, nil
	case <-ctx.Done():
		// The holder may still start it; its lifeline (closed by the
		// caller) ends it.
		return nil, ctx.Err()
	}
}

func (c *Client) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	return ErrClosed
}

// Wait returns how the process ended, or an error when the channel ended
// first (the holder, and with it the process, is gone).
func (p *Process) Wait() (Exit, error) {
	r, ok := <-p.replies
	if !ok {
		return Exit{}, p.c.closedErr()
	}
	return Exit{Code: r.Code, Signal: r.Signal}, nil
}

// NewClientConn takes over an accepted connection (a listener's: the
// holder dialled in).
func NewClientConn(conn *net.UnixConn) *Client {
	c := &Client{conn: conn, waiters: map[uint64]chan reply{}, done: make(chan struct{})}
	go c.read()
	return c
}
