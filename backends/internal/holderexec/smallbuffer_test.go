package holderexec

import (
	"strings"
	"testing"
	"time"
)

func TestSmallBufferTellsOfWrites(t *testing.T) {
	var b SmallBuffer
	changed := b.Changed()
	go func() { _, _ = b.Write([]byte("starting\ntriage-sandbox: ready\n")) }()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no word of the write")
	}
	if got := string(b.Bytes()); got != "starting\ntriage-sandbox: ready\n" {
		t.Fatalf("Bytes = %q", got)
	}
	// Past its 4 KiB it keeps nothing more, and says nothing more.
	_, _ = b.Write([]byte(strings.Repeat("x", 8192)))
	<-changed
	_, _ = b.Write([]byte("more"))
	select {
	case <-changed:
		t.Fatal("a write that kept nothing was told")
	default:
	}
	if n := len(b.String()); n != 4096 {
		t.Fatalf("kept %d bytes, want 4096", n)
	}
}
