package holderexec

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"testing/iotest"
)

// TestCopyGrowing: everything read is written, in order, through a pipe
// (reads of any size, past the buffer's growth) and through one-byte
// reads; a writer's error ends the copy.
func TestCopyGrowing(t *testing.T) {
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(i * 7 % 251)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = w.Write(data); _ = w.Close() }()
	var got bytes.Buffer
	copyGrowing(&got, r)
	_ = r.Close()
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("through a pipe: copied %d bytes, not the %d written", got.Len(), len(data))
	}
	got.Reset()
	copyGrowing(&got, iotest.OneByteReader(bytes.NewReader(data[:5000])))
	if !bytes.Equal(got.Bytes(), data[:5000]) {
		t.Fatalf("one byte at a time: copied %d bytes", got.Len())
	}
	fw := &failingWriter{after: 3}
	copyGrowing(fw, iotest.HalfReader(bytes.NewReader(data)))
	if fw.writes != 4 {
		t.Errorf("the copy went on after its writer failed: %d writes", fw.writes)
	}
}

type failingWriter struct{ after, writes int }

func (w *failingWriter) Write(b []byte) (int, error) {
	w.writes++
	if w.writes > w.after {
		return 0, errors.New("full")
	}
	return len(b), nil
}
