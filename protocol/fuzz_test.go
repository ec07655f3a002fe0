package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// Every decoder of this package reads input another process wrote; each
// must refuse or accept without panicking, and what it accepts must encode
// back to a spec it accepts again unchanged.

func fuzzSpec[T any](f *testing.F, e Entry, decode func([]string) (T, error), seeds ...string) {
	for _, s := range seeds {
		f.Add(env(s))
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := decode([]string{s})
		if err != nil {
			return
		}
		argv, err := Argv("/x", e, v)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", s, err)
		}
		again, err := decode(argv[2:])
		if err != nil {
			t.Fatalf("accepted %q, encoded %q, refused that: %v", s, argv[2], err)
		}
		if !reflect.DeepEqual(v, again) {
			t.Fatalf("round trip changed the spec: %+v -> %+v", v, again)
		}
	})
}

func FuzzDecodeHold(f *testing.F) {
	fuzzSpec(f, EntryHold, DecodeHold, `{}`, `{"lifeline":true,"ttl":"1m0s","stage":[{"path":"/w/r","kind":"dir"}]}`,
		`{"control_fd":3}`, `{"control_sock":"/s"}`)
}

func FuzzDecodeExec(f *testing.F) {
	fuzzSpec(f, EntryExec, DecodeExec, `{"argv":["true"]}`,
		`{"argv":["sh","-c","x"],"timeout":"1s","grace":"1s","lifeline":true,"seccomp":"default","export_fd":3,"export":{"stage":[{"path":"/w","kind":"skeleton"}],"max_entries":5}}`)
}

func FuzzDecodeUnpack(f *testing.F) {
	fuzzSpec(f, EntryUnpack, DecodeUnpack, `{"paths":[{"path":"/w","kind":"dir"}]}`)
}

func FuzzDecodeExport(f *testing.F) {
	fuzzSpec(f, EntryExport, DecodeExport, `{"stage":[{"path":"/w/NOTES.md","kind":"file"}],"max_entries":3}`)
}

func FuzzDecodeLocal(f *testing.F) {
	fuzzSpec(f, EntryLocal, DecodeLocal, `{"plan_fd":3,"hold":{"control_fd":4,"lifeline":true}}`)
}

func FuzzDecodeKeeper(f *testing.F) {
	fuzzSpec(f, EntryKeeper, DecodeKeeper, `{"dir":"/run/x","host":"0123456789abcdef"}`)
}

func FuzzDecodeWatch(f *testing.F) {
	fuzzSpec(f, EntryWatch, DecodeWatch, `{"owner":1,"owner_start":"9","remover":"/b"}`)
}

func FuzzDecodeProbe(f *testing.F) {
	fuzzSpec(f, EntryProbe, DecodeProbe, `{"tag":"a","plan":"eyJzdGVwcyI6W3siaWQiOiJhIiwib3AiOiJiIiwiYXJncyI6eyJrIjoidiJ9LCJsaXN0IjpbIngiXX1dLCJleGl0X2NvZGUiOjJ9"}`, `{"tag":"a"}`)
}

// FuzzStatuses reads a holder's output as the host does: whatever it
// holds, only whole status lines of known states come out, and each comes
// out again when written back.
func FuzzStatuses(f *testing.F) {
	var b bytes.Buffer
	_ = WriteStatus(&b, Status{State: StateStagingFailed, Detail: "x\ny"})
	f.Add(b.Bytes())
	f.Add([]byte("triage-sandbox-status {\"state\":\"ready\"}\r\nrest"))
	f.Add([]byte("\x00\xff\n\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		for _, s := range Statuses(out) {
			if !knownStates[s.State] {
				t.Fatalf("unknown state %q accepted", s.State)
			}
			var w bytes.Buffer
			if err := WriteStatus(&w, s); err != nil {
				t.Fatal(err)
			}
			if got := Statuses(w.Bytes()); len(got) != 1 || got[0].State != s.State {
				t.Fatalf("status %+v does not survive a rewrite: %+v", s, got)
			}
		}
		_ = Human(out)
		if _, err := json.Marshal(Statuses(out)); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseProbeObservations reads what a probe inside the sandbox printed
// (the sandbox controls it): never a panic, and only observations with an
// id, each under its own.
func FuzzParseProbeObservations(f *testing.F) {
	for _, s := range []string{`{"id":"FS-01","errno":"ENOENT"}`, "noise\n{\"id\":\"x\"}", `{"id":`, `[]`, `{"id":"a"}{"id":"a","errno":"EPERM"}`, `{"id":"a","new":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		obs, _ := ParseProbeObservations(bytes.NewReader(b))
		for id, o := range obs {
			if id == "" || o.ID != id {
				t.Fatalf("observation %+v under id %q", o, id)
			}
		}
	})
}
