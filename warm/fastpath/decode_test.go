package fastpath

import (
	"reflect"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// reflective is DecodeRequest without decodeCanonical.
func reflective(b []byte) (Request, error) {
	var r Request
	return r, protocol.Versioned("the front", b, MaxMessage, &r)
}

// sameDecode: DecodeRequest decides b as the reflective decoder does: the
// same request, or the same error.
func sameDecode(t *testing.T, b []byte) {
	t.Helper()
	got, gerr := DecodeRequest(b)
	want, werr := reflective(b)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %#v, %v\nwant %#v, %v", b, got, gerr, want, werr)
	}
}

// TestDecodeCanonical: the requests a front sends take the canonical path
// and decode as the reflective decoder decodes them; odd ones too.
func TestDecodeCanonical(t *testing.T) {
	usual := (&Request{Args: []string{"run", "--session", "s", "--", "true"}, Cwd: "/w", Env: []string{"A=1", "PATH=/bin"}, CLI: "1:2:3:4"}).Encode()
	if _, ok := decodeCanonical(usual); !ok {
		t.Fatalf("a front's usual request is not read by the canonical path: %s", usual)
	}
	for _, b := range []string{string(usual),
		`{"protocol":3,"args":["run"],"cwd":"/","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["run"],"cwd":"/","env":null,"cli":"x"}`,
		`{"protocol":3,"args":null,"cwd":"/","env":[],"cli":"x"}`,
		`{"protocol":2,"args":["run"],"cwd":"/","env":[],"cli":"x"}`,
		`{"protocol":03,"args":["run"],"cwd":"/","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["version"],"cwd":"/","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["run"],"cwd":"rel","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["run"],"cwd":"/","env":["NOEQUALS"],"cli":"x"}`,
		`{"protocol":3,"args":["run"],"cwd":"/","env":[],"cli":""}`,
		`{"protocol":3,"args":["run"],"cwd":"/","env":[],"cli":"x"} `,
		`{"protocol":3,"args":["run"],"cwd":"/","env":[],"cli":"x"}{}`,
		`{"protocol":3,"args":["run",],"cwd":"/","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["r\u0075n"],"cwd":"/","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["run"],"cwd":"/\xff","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["run"],"cwd":"/","env":[],"cli":"x","extra":1}`,
		`{"protocol":3,"args":["run"],"cwd":"/","env":[],"cli":"x"`,
		`{"protocol":99999999999,"args":["run"],"cwd":"/","env":[],"cli":"x"}`,
	} {
		sameDecode(t, []byte(b))
	}
}

// FuzzDecodeCanonical: whatever a connection sends, DecodeRequest decides
// it as the reflective strict decoder does.
func FuzzDecodeCanonical(f *testing.F) {
	f.Add([]byte(`{"protocol":3,"args":["run","--session","s","--","true"],"cwd":"/w","env":["A=1"],"cli":"1:2:3:4"}`))
	f.Add([]byte(`{"protocol":3,"args":["run"],"cwd":"/","env":null,"cli":"x"}`))
	f.Add([]byte(`{"protocol":3,"args":[],"cwd":"/","env":["a=\"b"],"cli":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) { sameDecode(t, b) })
}
