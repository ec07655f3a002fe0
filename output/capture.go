// Package output keeps what a sandboxed command prints safe and bounded:
// Stream redacts, neutralises and keeps the head and the tail of user-facing
// output; Capture keeps raw head and tail for machine protocols (the
// selftest's probe reports) and tests.
package output

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// DefaultLimit is the bytes kept in all (head + tail).
const DefaultLimit = 64 << 10

// Capture is an io.Writer that keeps the first and last limit/2 bytes of
// everything written, in bounded memory, and counts the rest. Safe for
// concurrent writers.
type Capture struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  *ring
	total int64
}

// NewCapture keeps at most limit bytes (DefaultLimit when limit <= 0).
func NewCapture(limit int) *Capture {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Capture{limit: limit, tail: newRing(limit - limit/2)}
}

// Write never fails and never blocks the producer on memory.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	headCap := c.limit / 2
	if len(c.head) < headCap {
		k := min(headCap-len(c.head), len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	c.tail.write(p)
	return n, nil
}

// Total is the number of bytes written.
func (c *Capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Truncated reports whether anything was dropped.
func (c *Capture) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total > int64(c.limit)
}

// String returns head, a marker with the dropped byte count, and tail. Cuts
// are moved to UTF-8 boundaries so no character is split.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tail.bytes()
	if c.total <= int64(c.limit) {
		return string(c.head) + string(tail)
	}
	head := trimPartialEnd(c.head)
	tail = trimPartialStart(tail)
	dropped := c.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n[... %d bytes omitted ...]\n%s", head, dropped, tail)
}

// trimPartialEnd drops an incomplete UTF-8 sequence at the end of b.
func trimPartialEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// trimPartialStart drops continuation bytes at the start of b.
func trimPartialStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
