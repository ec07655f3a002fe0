package control

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeReply reads replies a holder could send: whatever the bytes,
// decodeReply refuses or returns a reply in range that encodes and
// decodes back to itself.
func FuzzDecodeReply(f *testing.F) {
	for _, s := range []string{`{"id":1,"pid":42,"started":true}`, `{"id":1,"exited":true,"code":137,"signal":9}`,
		`{"id":2,"error":"no"}`, `{"id":1,"code":-1}`, `{"id":1} {}`, `{"id":1,"x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeReply(b)
		if err != nil {
			return
		}
		if r.Code < 0 || r.Code > 255 || r.Signal < 0 || r.Signal > 64 || r.PID < 0 {
			t.Fatalf("accepted an out-of-range reply %+v", r)
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if r2, err := decodeReply(again); err != nil || r2 != r {
			t.Fatalf("reply %+v does not survive a round trip: %+v, %v", r, r2, err)
		}
	})
}
