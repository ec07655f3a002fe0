package output

// ring keeps the latest size bytes written to it. Its buffer grows with
// what is written, up to size: a command that prints little (most do)
// costs little, where a buffer of the whole size made at the start was a
// large allocation per session command, and the keeper's collections.
type ring struct {
	buf  []byte
	size int
	pos  int // next write position once full
	full bool
}

func newRing(size int) *ring { return &ring{size: size} }

func (r *ring) write(b []byte) {
	size := r.size
	if size <= 0 || len(b) == 0 {
		return
	}
	if len(b) >= size {
		r.buf = append(r.buf[:0], b[len(b)-size:]...)
		r.pos, r.full = 0, true
		return
	}
	for len(b) > 0 {
		if !r.full {
			k := min(size-len(r.buf), len(b))
			r.reserve(k)
			r.buf = append(r.buf, b[:k]...)
			b = b[k:]
			if len(r.buf) == size {
				r.full, r.pos = true, 0
			}
			continue
		}
		k := copy(r.buf[r.pos:], b)
		b = b[k:]
		r.pos = (r.pos + k) % size
	}
}

// reserve makes room for k more bytes, doubling but never past size.
func (r *ring) reserve(k int) {
	need := len(r.buf) + k
	if need <= cap(r.buf) {
		return
	}
	buf := make([]byte, len(r.buf), min(r.size, max(need, 2*cap(r.buf), 512)))
	copy(buf, r.buf)
	r.buf = buf
}

// bytes returns the kept bytes, oldest first.
func (r *ring) bytes() []byte {
	if !r.full {
		return r.buf
	}
	return append(append([]byte(nil), r.buf[r.pos:]...), r.buf[:r.pos]...)
}
