package output

// ring keeps the latest size bytes written to it.
type ring struct {
	buf  []byte
	pos  int // next write position once full
	full bool
}

func newRing(size int) *ring { return &ring{buf: make([]byte, 0, size)} }

func (r *ring) write(b []byte) {
	size := cap(r.buf)
	if size == 0 || len(b) == 0 {
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

// bytes returns the kept bytes, oldest first.
func (r *ring) bytes() []byte {
	if !r.full {
		return r.buf
	}
	return append(append([]byte(nil), r.buf[r.pos:]...), r.buf[:r.pos]...)
}
