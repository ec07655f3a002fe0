package fastpath

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// FuzzDecodeRequest: whatever a connection sends, the keeper's decoder
// returns a request that validates or an error, never panics, and a
// request it accepts encodes back to one it accepts alike.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"protocol":3,"args":["run","--session","s","--","true"],"cwd":"/w","env":["A=1"],"cli":"1:2:3:4"}`,
		`{"protocol":3,"args":["run"],"cwd":"/","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["version"],"cwd":"/","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["run"],"cwd":"rel","env":[],"cli":"x"}`,
		`{"protocol":3,"args":["run"],"cwd":"/","env":["NOEQUALS"],"cli":"x"}`,
		`{"protocol":3,"args":["run"],"cwd":"/","env":[],"cli":"x","extra":1}`,
		`{"protocol":3,"args":["run"]}`, `{"args":["run"]}`, `[]`, `{`, ``,
		`{"protocol":3,"args":["run"],"args":["x"],"cwd":"/","env":[],"cli":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		if verr := r.Validate(); verr != nil {
			t.Fatalf("accepted a request that does not validate: %v", verr)
		}
		again, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := DecodeRequest(again)
		if err != nil || !slices.Equal(r2.Args, r.Args) || !slices.Equal(r2.Env, r.Env) || r2.Cwd != r.Cwd || r2.CLI != r.CLI {
			t.Fatalf("round trip: %+v → %+v, %v", r, r2, err)
		}
	})
}

// FuzzDecodeReply: the front's decoders of the keeper's last frame.
func FuzzDecodeReply(f *testing.F) {
	for _, seed := range []string{`{"protocol":3,"code":3}`, `{"protocol":3,"code":300}`, `{"protocol":3,"code":-1}`,
		`{"protocol":3,"reason":"x"}`, `{"protocol":3,"reason":""}`, `{"protocol":0}`, `null`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := DecodeExit(b); err == nil && (e.Code < 0 || e.Code > 255) {
			t.Fatalf("accepted exit code %d", e.Code)
		}
		if fb, err := DecodeFallback(b); err == nil && fb.Reason == "" {
			t.Fatal("accepted a fallback without a reason")
		}
	})
}

// TestDecodeStrict: what the decoders refuse, each for its reason.
func TestDecodeStrict(t *testing.T) {
	for _, tt := range []struct {
		name, msg string
		mismatch  bool
	}{
		{"another version", `{"protocol":98,"args":["run"],"cwd":"/","env":[],"cli":"x"}`, true},
		{"no version", `{"args":["run"],"cwd":"/","env":[],"cli":"x"}`, true},
		{"unknown field", `{"protocol":3,"args":["run"],"cwd":"/","env":[],"cli":"x","more":1}`, false},
		{"not run", `{"protocol":3,"args":["selftest"],"cwd":"/","env":[],"cli":"x"}`, false},
		{"relative cwd", `{"protocol":3,"args":["run"],"cwd":"w","env":[],"cli":"x"}`, false},
		{"bad env entry", `{"protocol":3,"args":["run"],"cwd":"/","env":["A"],"cli":"x"}`, false},
		{"no cli", `{"protocol":3,"args":["run"],"cwd":"/","env":[]}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.msg))
			var mm *protocol.MismatchError
			if err == nil || errors.As(err, &mm) != tt.mismatch {
				t.Fatalf("DecodeRequest(%s) = %v, want an error (a version mismatch: %v)", tt.msg, err, tt.mismatch)
			}
		})
	}
	if _, err := DecodeRequest([]byte(`{"protocol":3,"args":["run","--session","s","--","true"],"cwd":"/w","env":["A=1"],"cli":"1:2:3:4"}`)); err != nil {
		t.Fatalf("a good request refused: %v", err)
	}
}
