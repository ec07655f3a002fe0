package egress

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

const (
	// idle ends a connection on which nothing moved for this long.
	idle = 2 * time.Minute
	// headTime is all a client has to send one request head.
	headTime = time.Minute
	// helloTime is all a client has to send its ClientHello.
	helloTime = 30 * time.Second
	// dialTime and resolveTime bound one dial and one lookup.
	dialTime    = 15 * time.Second
	resolveTime = 10 * time.Second
)

// timedConn puts a deadline on every read and write: idle from now, or the
// earlier one set by until (a head must arrive whole in headTime, however
// slowly its bytes trickle).
type timedConn struct {
	net.Conn
	until atomic.Int64 // unix nanoseconds; 0: none
}

func (c *timedConn) deadline() time.Time {
	d := time.Now().Add(idle)
	if u := c.until.Load(); u != 0 && u < d.UnixNano() {
		return time.Unix(0, u)
	}
	return d
}

func (c *timedConn) Read(b []byte) (int, error) {
	if err := c.SetReadDeadline(c.deadline()); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *timedConn) Write(b []byte) (int, error) {
	if err := c.SetWriteDeadline(time.Now().Add(idle)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// within sets the deadline of the reads until the next within(0).
func (c *timedConn) within(d time.Duration) {
	if d == 0 {
		c.until.Store(0)
		return
	}
	c.until.Store(time.Now().Add(d).UnixNano())
}

// errByteBound: the run's bytes passed Limits.MaxBytes.
var errByteBound = errors.New("the run's byte bound was passed")

// upConn is a connection to an upstream: every byte read or written is
// counted for its decision and against the run's bound, which cuts it.
type upConn struct {
	timedConn
	p        *Proxy
	up, down atomic.Int64
	cut      atomic.Bool
	last     atomic.Int64 // unix nanoseconds of the last byte either way
}

// busy says whether bytes moved either way within idle: a tunnel whose
// one direction is quiet (a long download) is not idle.
func (c *upConn) busy() bool {
	return time.Since(time.Unix(0, c.last.Load())) < idle
}

func (c *upConn) Read(b []byte) (int, error) {
	n, err := c.timedConn.Read(b)
	if n > 0 && !c.received(int64(n)) {
		return 0, errByteBound
	}
	return n, err
}

// received counts n bytes read from the upstream, which pass on only when
// the run's bound allows them; past it the connection is cut.
func (c *upConn) received(n int64) bool {
	if !c.within(n) {
		return false
	}
	c.down.Add(n)
	c.last.Store(time.Now().UnixNano())
	return true
}

// sent counts n bytes about to go to the upstream, as received does.
func (c *upConn) sent(n int64) bool {
	if !c.within(n) {
		return false
	}
	c.up.Add(n)
	c.last.Store(time.Now().UnixNano())
	return true
}

// within takes n bytes from the run's bound, and cuts the connection when
// they pass it.
func (c *upConn) within(n int64) bool {
	if c.p.bytes.Add(n) > c.p.lim.MaxBytes {
		c.cut.Store(true)
		c.Conn.Close()
		return false
	}
	return true
}

func (c *upConn) Write(b []byte) (int, error) {
	if !c.within(int64(len(b))) {
		return 0, errByteBound
	}
	n, err := c.timedConn.Write(b)
	c.up.Add(int64(n))
	c.last.Store(time.Now().UnixNano())
	return n, err
}
