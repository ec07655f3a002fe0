package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDecodeTraceEvent(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	origin := now.Add(-time.Minute).UnixNano()
	line := func(extra string) []byte {
		return []byte(fmt.Sprintf(`{"proc":"local-helper","pid":7,"phase":"helper.confine","start_ms":1.5,"dur_ms":2,"origin_unix_ns":%d%s}`+"\n", origin, extra))
	}
	if e, err := DecodeTraceEvent(line(""), now); err != nil || e.Phase != "helper.confine" || e.DurMS != 2 {
		t.Fatalf("a good line: %+v %v", e, err)
	}
	for _, tt := range []struct {
		name string
		line []byte
		want string
	}{
		{"unknown field", line(`,"x":1`), "unknown field"},
		{"trailing data", append(line(""), "{}"...), "data after"},
		{"too long", line(`,"proc2":"` + strings.Repeat("x", MaxTraceLine) + `"`), "bound"},
		{"bad name", []byte(fmt.Sprintf(`{"phase":"Evil\u001b[2J","origin_unix_ns":%d}`, origin)), "phase"},
		{"negative offset", []byte(fmt.Sprintf(`{"phase":"a","start_ms":-1,"origin_unix_ns":%d}`, origin)), "range"},
		{"origin long ago", []byte(`{"phase":"a","origin_unix_ns":5}`), "range"},
	} {
		if _, err := DecodeTraceEvent(tt.line, now); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// FuzzDecodeTraceEvent: whatever a relayed line holds, an accepted event
// has a plain phase name and encodes to a line accepted again.
func FuzzDecodeTraceEvent(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add([]byte(fmt.Sprintf(`{"proc":"p","pid":1,"phase":"a.b","start_ms":1,"dur_ms":1,"origin_unix_ns":%d}`, now.UnixNano())))
	f.Add([]byte(`{"phase":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeTraceEvent(b, now)
		if err != nil {
			return
		}
		if !traceName(e.Phase) {
			t.Fatalf("accepted phase %q", e.Phase)
		}
		again, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) <= MaxTraceLine {
			if _, err := DecodeTraceEvent(again, now); err != nil {
				t.Fatalf("accepted %q, encoded %q, refused that: %v", b, again, err)
			}
		}
	})
}
