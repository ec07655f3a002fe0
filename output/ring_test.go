package output

import (
	"bytes"
	"testing"
)

// FuzzRing: the ring keeps the last size bytes of what was written, in
// any split of writes, as a plain buffer cut to its tail would.
func FuzzRing(f *testing.F) {
	f.Add(5, []byte("hello world, the ring"), []byte{3, 1, 7, 0, 20})
	f.Add(1000, bytes.Repeat([]byte("x"), 3000), []byte{255, 1, 200})
	f.Add(3000, bytes.Repeat([]byte("ab"), 1000), []byte{10, 100, 50})
	f.Fuzz(func(t *testing.T, size int, data, cuts []byte) {
		size = size%4096 + 1
		if size < 1 {
			size = -size + 1
		}
		r := newRing(size)
		var all []byte
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(cuts) {
				n = min(n, int(cuts[i])*7)
			}
			r.write(rest[:n])
			all = append(all, rest[:n]...)
			rest = rest[n:]
		}
		want := all[max(0, len(all)-size):]
		if got := r.bytes(); !bytes.Equal(got, want) {
			t.Fatalf("size %d: kept %q, want %q", size, got, want)
		}
		if cap(r.buf) > 2*size+512 {
			t.Fatalf("size %d: a buffer of %d", size, cap(r.buf))
		}
	})
}
