package fastpath

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestEncodeIsJSONMarshal: the front's hand-written request is
// json.Marshal's, byte for byte, for every kind of string a working
// directory, an argument or a variable can hold.
func TestEncodeIsJSONMarshal(t *testing.T) {
	odd := []string{"", "plain", `q"uote`, `back\slash`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<a>&amp;",
		"ünïcødé 日本", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate", "emoji 😀", "=", "A=1=2"}
	tests := []struct {
		name string
		req  Request
	}{
		{"a session's run", Request{Args: []string{"run", "--session", "s", "--", "true"}, Cwd: "/w", Env: []string{"A=1", "PATH=/bin"}, CLI: "1:2:3:4"}},
		{"nil env", Request{Args: []string{"run"}, Cwd: "/", CLI: "x"}},
		{"empty env and args", Request{Args: []string{}, Cwd: "/", Env: []string{}, CLI: "x"}},
		{"odd strings everywhere", Request{Args: odd, Cwd: "/" + odd[3] + odd[9], Env: odd, CLI: odd[4]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.SetProtocol()
			want, err := json.Marshal(&tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.req.Encode(); !bytes.Equal(got, want) {
				t.Errorf("Encode:\n%s\njson.Marshal:\n%s", got, want)
			}
		})
	}
}

// FuzzEncodeRequest: for any strings, Encode is json.Marshal.
func FuzzEncodeRequest(f *testing.F) {
	f.Add("run", "/w", "A=1", "1:2:3:4")
	f.Add("\xff<\u2028", "\x00", "\"\\", "")
	f.Fuzz(func(t *testing.T, arg, cwd, env, cli string) {
		r := Request{Args: []string{"run", arg}, Cwd: cwd, Env: []string{env, arg}, CLI: cli}
		got := r.Encode()
		want, err := json.Marshal(&r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Encode %q, json.Marshal %q (%v)", got, want, err)
		}
	})
}
