package keeper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

func built(t *testing.T, role profiles.Role) *policy.Policy {
	t.Helper()
	root := t.TempDir()
	host := policy.Host{Home: t.TempDir(), UID: 1000, GID: 1000, OS: "linux", Cwd: root, Env: []string{"PATH=/usr/bin:/bin"}}
	p, err := policy.Build(config.Default(root), role, host, policy.Options{Backend: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicyRoundTrip: every role's built policy survives a host request
// strictly (no field the decoder does not know, nothing changed).
func TestPolicyRoundTrip(t *testing.T) {
	for _, role := range []profiles.Role{profiles.RoleAgent, profiles.RoleReproducer} {
		p := built(t, role)
		p.Warm.Session = "s"
		b, err := Encode(&HostRequest{Op: HostKeep, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeHostRequest(b)
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if got.Policy.WarmHash() != p.WarmHash() || got.Policy.Hash() != p.Hash() {
			t.Fatalf("%s: the policy changed on the way", role)
		}
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	h := Hello{ID: "c1", Scratch: policy.ScratchPaths{Home: "/h", Tmp: "/t"}, PolicyHash: "abc", Warnings: []string{"w"}}
	b, err := Encode(&h)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeHello("k", b); err != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("hello: %+v %v", got, err)
	}
	req := Request{Argv: []string{"true"}, Workdir: "/w", Timeout: time.Second, HasStdin: true}
	b, _ = Encode(&req)
	if got, err := DecodeRequest(b); err != nil || !reflect.DeepEqual(got, req) {
		t.Fatalf("request: %+v %v", got, err)
	}
	res := Result{Result: backends.Result{ExitCode: 3, Duration: time.Second}, Network: []egress.Decision{{Host: "x", Port: 443}}}
	b, _ = Encode(&res)
	if got, err := DecodeResult(b); err != nil || !reflect.DeepEqual(got, res) {
		t.Fatalf("result: %+v %v", got, err)
	}
	rec := Record{Kind: KindSession, Name: "s", PID: 7, Start: "9", Since: time.Unix(5, 0).UTC()}
	b, _ = Encode(&rec)
	if got, err := DecodeRecord(b); err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("record: %+v %v", got, err)
	}
}

// TestAnotherVersion: a keeper's message of another build is named as
// such, in one line that says what to do, before anything else is read.
func TestAnotherVersion(t *testing.T) {
	for _, tt := range []struct {
		name string
		dec  func([]byte) error
		msg  string
	}{
		{"hello before versions", func(b []byte) error { _, err := DecodeHello("the keeper at /k.sock", b); return err },
			`{"id":"c1","scratch":{"home":"/h","tmp":"/t"},"policy_hash":"x"}`},
		{"hello of a later build", func(b []byte) error { _, err := DecodeHello("the keeper at /k.sock", b); return err },
			`{"protocol":9,"sandbox":{"id":"c1"}}`},
		{"request", func(b []byte) error { _, err := DecodeRequest(b); return err }, `{"argv":["true"],"timeout_ns":0,"has_stdin":false}`},
		{"result", func(b []byte) error { _, err := DecodeResult(b); return err }, `{"protocol":98,"result":{}}`},
		{"host request", func(b []byte) error { _, err := DecodeHostRequest(b); return err }, `{"op":"keep","policy":{"role":"agent"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.dec([]byte(tt.msg))
			var mm *protocol.MismatchError
			if !errors.As(err, &mm) || !strings.Contains(err.Error(), "rebuild both") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v: want a one-line mismatch", err)
			}
		})
	}
	// A record of another build reads as what ends it, and says so.
	rec, err := DecodeRecord([]byte(`{"kind":"session","name":"s1","workspace":"/w","pid":42,"start":"99","new":{}}`))
	var mm *protocol.MismatchError
	if !errors.As(err, &mm) || rec.Protocol != 0 || rec.PID != 42 || rec.Start != "99" || rec.Name != "s1" || rec.Workspace != "/w" || rec.Policy != "protocol 0" {
		t.Fatalf("record of another version: %+v %v", rec, err)
	}
}

func TestRefuses(t *testing.T) {
	v := protocol.Version
	for _, tt := range []struct {
		name, msg, want string
		dec             func([]byte) error
	}{
		{"unknown field", fmt.Sprintf(`{"protocol":%d,"argv":["x"],"env":["A=1"]}`, v), "unknown field", decReq},
		{"trailing data", fmt.Sprintf(`{"protocol":%d,"argv":["x"]} {}`, v), "data after", decReq},
		{"empty argv", fmt.Sprintf(`{"protocol":%d,"argv":[]}`, v), "empty command", decReq},
		{"negative timeout", fmt.Sprintf(`{"protocol":%d,"argv":["x"],"timeout_ns":-1}`, v), "negative", decReq},
		{"hello of nothing", fmt.Sprintf(`{"protocol":%d}`, v), "names its sandbox", decHello},
		{"over the bound", fmt.Sprintf(`{"protocol":%d,"argv":["%s"]}`, v, strings.Repeat("x", MaxMessage)), "bound", decReq},
		{"record without pid", fmt.Sprintf(`{"protocol":%d,"kind":"pool","start":"1"}`, v), "pid is required", decRec},
		{"record of no kind", fmt.Sprintf(`{"protocol":%d,"kind":"x","pid":1,"start":"1"}`, v), "kind", decRec},
		{"policy absent", fmt.Sprintf(`{"protocol":%d,"op":"keep"}`, v), "a policy", decPolicy},
		{"policy unknown field", fmt.Sprintf(`{"protocol":%d,"op":"keep","policy":{"rolez":"agent"}}`, v), "unknown field", decPolicy},
		{"end of no key", fmt.Sprintf(`{"protocol":%d,"op":"end","key":"../x"}`, v), "16 hex", decPolicy},
		{"record of a host not a key", fmt.Sprintf(`{"protocol":%d,"kind":"pool","pid":1,"start":"1","host":"/x"}`, v), "host", decRec},
		{"host record without start", fmt.Sprintf(`{"protocol":%d,"pid":1}`, v), "required", func(b []byte) error { _, err := DecodeHostRecord(b); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.dec([]byte(tt.msg)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func decReq(b []byte) error    { _, err := DecodeRequest(b); return err }
func decHello(b []byte) error  { _, err := DecodeHello("k", b); return err }
func decRec(b []byte) error    { _, err := DecodeRecord(b); return err }
func decPolicy(b []byte) error { _, err := DecodeHostRequest(b); return err }

// fuzzMessage: whatever b holds, the decoder refuses or accepts without
// panicking, and what it accepts encodes to a message it accepts again
// unchanged.
func fuzzMessage[T any, P interface {
	*T
	SetProtocol()
}](f *testing.F, dec func([]byte) (T, error), seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := dec(b)
		if err != nil {
			return
		}
		again, err := Encode(P(&v))
		if err != nil {
			t.Fatalf("accepted %q, cannot encode it: %v", b, err)
		}
		w, err := dec(again)
		if err != nil {
			t.Fatalf("accepted %q, encoded %q, refused that: %v", b, again, err)
		}
		x, _ := json.Marshal(v)
		y, _ := json.Marshal(w)
		if !bytes.Equal(x, y) {
			t.Fatalf("round trip changed the message: %s -> %s", x, y)
		}
	})
}

func FuzzDecodeHello(f *testing.F) {
	fuzzMessage[Hello](f, func(b []byte) (Hello, error) { return DecodeHello("k", b) },
		`{"protocol":3,"id":"c","scratch":{"home":"/h","tmp":"/t"},"policy_hash":"x","warnings":["w"]}`, `{"protocol":3,"error":"no"}`)
}

func FuzzDecodeRequest(f *testing.F) {
	fuzzMessage[Request](f, DecodeRequest, `{"protocol":3,"argv":["sh","-c","x"],"workdir":"/w","timeout_ns":5,"has_stdin":true}`)
}

func FuzzDecodeResult(f *testing.F) {
	fuzzMessage[Result](f, DecodeResult, `{"protocol":3,"result":{"exit_code":1,"duration_ns":3},"network":[{"host":"x","port":1,"allowed":true}]}`)
}

func FuzzDecodeRecord(f *testing.F) {
	fuzzMessage[Record](f, DecodeRecord, `{"protocol":3,"kind":"pool","name":"pool:agent","pid":3,"start":"4","since":"2026-01-01T00:00:00Z"}`)
}

func FuzzDecodeHostRequest(f *testing.F) {
	fuzzMessage[HostRequest](f, DecodeHostRequest, `{"protocol":3,"op":"keep","policy":{"role":"agent","warm":{"session":"s"}}}`,
		`{"protocol":3,"op":"end","key":"0123456789abcdef"}`)
}

func FuzzDecodeHostReply(f *testing.F) {
	fuzzMessage[HostReply](f, DecodeHostReply, `{"protocol":3}`, `{"protocol":3,"error":"x","retry":true}`)
}

func FuzzDecodeHostRecord(f *testing.F) {
	fuzzMessage[HostRecord](f, DecodeHostRecord, `{"protocol":3,"pid":3,"start":"4","since":"2026-01-01T00:00:00Z"}`)
}
