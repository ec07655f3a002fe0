package localplan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func small() Plan {
	return Plan{DevShmSize: 1 << 20, Hostname: "sandbox", Workdir: "/", UID: 65534, GID: 65534,
		Landlock: LandlockPlan{MinABI: 1}, Seccomp: SeccompPlan{Set: "default"},
		Tmpfs:   []Tmpfs{{Target: "/home/u", Size: 1 << 20, Inodes: 100, Mode: 0o700, UID: 65534, GID: 65534}},
		Rlimits: []Rlimit{{Name: "NOFILE", Soft: 64, Hard: 64}}}
}

func TestReadRoundTrip(t *testing.T) {
	b, err := json.Marshal(small())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(bytes.NewReader(b))
	if err != nil || !reflect.DeepEqual(got, small()) {
		t.Fatalf("Read: %+v %v", got, err)
	}
}

func TestReadRefuses(t *testing.T) {
	good, _ := json.Marshal(small())
	for _, tt := range []struct {
		name string
		in   []byte
		want string
	}{
		{"unknown field", bytes.Replace(good, []byte(`{`), []byte(`{"no_new_privs":false,`), 1), "unknown field"},
		{"trailing data", append(append([]byte{}, good...), `{}`...), "data after"},
		{"over the bound", append(append([]byte{}, good...), bytes.Repeat([]byte(" "), maxPlan)...), "bound"},
		{"no seccomp set", bytes.Replace(good, []byte(`"set":"default"`), []byte(`"set":""`), 1), "seccomp.set"},
		{"mode not octal", bytes.Replace(good, []byte(`"mode":"0700"`), []byte(`"mode":"rwx"`), 1), "not octal"},
	} {
		if _, err := Read(bytes.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// FuzzRead: whatever the plan descriptor holds, Read refuses or accepts
// without panicking, and what it accepts encodes to a plan it accepts
// again unchanged (as encoded).
func FuzzRead(f *testing.F) {
	good, _ := json.Marshal(small())
	f.Add(good)
	f.Add([]byte(`{"binds":[{"source":"/usr","write":false,"discard":{"size":1,"inodes":1}}],"masks":[{"path":"/x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Read(bytes.NewReader(again))
		if err != nil {
			t.Fatalf("accepted %q, encoded %q, refused that: %v", b, again, err)
		}
		// Compared as encoded: an empty list and none encode alike.
		if again2, _ := json.Marshal(q); !bytes.Equal(again, again2) {
			t.Fatalf("round trip changed the plan: %s -> %s", again, again2)
		}
	})
}
